package wire

// Error codes of the gateway's edge limits (not seed codes: the seed names no body, key or
// request-id limits). Data-plane routes answer them in the seed's body shape with
// X-SMG-Error-Code; the worker-management routes answer 401 as UNAUTHORIZED in the
// worker-API shape.
const (
	// CodePayloadTooLarge (413): the request body, announced (Content-Length) or received,
	// exceeds --max-payload-size.
	CodePayloadTooLarge = "payload_too_large"
	// CodeBodyReadTimeout (408): the client did not finish sending its body within
	// --body-read-timeout-secs; the connection is closed.
	CodeBodyReadTimeout = "body_read_timeout"
	// CodeInvalidAPIKey (401): --api-key is set and the request carries no
	// `Authorization: Bearer <key>` with it (OpenAI's code for the same answer).
	CodeInvalidAPIKey = "invalid_api_key"
	// CodeInvalidRequestID (400): a request-id header is longer than MaxRequestIDLen or
	// holds characters outside ValidRequestID's set.
	CodeInvalidRequestID = "invalid_request_id"
	// CodeWorkerUnauthorized (401, worker-API shape): --admin-api-key is set and the
	// request does not carry it as a Bearer token.
	CodeWorkerUnauthorized = "UNAUTHORIZED"
)

// MaxRequestIDLen is the longest client request id accepted, in bytes: room for a UUID, a
// W3C trace id or a prefixed gateway id (`chatcmpl-` + 24) several times over.
const MaxRequestIDLen = 128

// ValidRequestID reports whether v may be used as a request id: 1..MaxRequestIDLen bytes of
// ASCII letters, digits and - _ . : / + = @. Anything else (spaces, quotes, control bytes,
// non-ASCII) could forge log lines or headers downstream.
func ValidRequestID(v string) bool {
	if len(v) == 0 || len(v) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '_', c == '.', c == ':', c == '/', c == '+', c == '=', c == '@':
		default:
			return false
		}
	}
	return true
}
