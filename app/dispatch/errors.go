package dispatch

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

// errorBody is the seed's error shape (smg-spec.md §6.1); key order type, code, message, param.
type errorBody struct {
	Error errorInfo `json:"error"`
}

type errorInfo struct {
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// MarshalError renders e in the seed's body shape:
// {"error":{"type":"<errs.Type>","code":"<code>","message":"<text>","param":null}}.
func MarshalError(e *errs.Error) []byte {
	b, _ := json.Marshal(errorBody{Error: errorInfo{Type: errs.Type(e.Status), Code: e.Code, Message: e.Message}})
	return b
}

// WriteError is the one place a data-plane error becomes an HTTP response: status, the
// X-SMG-Error-Code header, Retry-After for sheds, and the seed's JSON body. Any error that is
// not an *errs.Error is answered as 500 internal_error without leaking its text.
func WriteError(w http.ResponseWriter, err error) {
	e, ok := errs.As(err)
	if !ok {
		e = errs.New(http.StatusInternalServerError, "internal_error", "internal error")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set(wire.HeaderErrorCode, e.Code)
	if e.RetryAfterSecs > 0 {
		h.Set(wire.HeaderRetryAfter, strconv.Itoa(e.RetryAfterSecs))
	}
	w.WriteHeader(e.Status)
	_, _ = w.Write(MarshalError(e))
}

// upstreamMessage extracts a readable message from an engine error body: error.message,
// then top-level message, then detail (SGLang HTTPException), else the raw text
// (smg-spec.md §2.8.4; engines.md §2.2, §3.4).
func upstreamMessage(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message *string         `json:"message"`
		Detail  *string         `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		if len(v.Error) > 0 {
			var inner struct {
				Message *string `json:"message"`
			}
			if json.Unmarshal(v.Error, &inner) == nil && inner.Message != nil {
				return *inner.Message
			}
			var s string
			if json.Unmarshal(v.Error, &s) == nil {
				return s
			}
		}
		if v.Message != nil {
			return *v.Message
		}
		if v.Detail != nil {
			return *v.Detail
		}
	}
	if len(body) > 2048 {
		body = body[:2048]
	}
	return string(body)
}

// decodeError maps a decode leg's error status to the gateway error (status passed through;
// codes of smg-spec.md §2.8.4).
func decodeError(status int, body []byte) *errs.Error {
	code := "decode_error"
	switch status {
	case 400:
		code = "decode_bad_request"
	case 404:
		code = "decode_not_found"
	case 500:
		code = "decode_internal_error"
	case 502:
		code = "decode_bad_gateway"
	case 503:
		code = "decode_unavailable"
	}
	return &errs.Error{Status: status, Code: code, Message: upstreamMessage(body), Leg: "decode", Retryable: retryableStatus(status)}
}

// prefillError maps a prefill leg's error status on the parallel path: the status passes
// through with prefill_upstream_error, the code the seed names for vLLM's prefill errors, so
// an engine's answer gets the same code whichever engine gave it.
func prefillError(status int, body []byte) *errs.Error {
	return &errs.Error{Status: status, Code: wire.CodePrefillUpstreamError, Leg: "prefill", Retryable: retryableStatus(status),
		Message: "Prefill server error (" + strconv.Itoa(status) + "): " + upstreamMessage(body)}
}

// retryableStatus is the retry set of smg-spec.md §6.7: 408, 429, 500, 502, 503, 504.
func retryableStatus(s int) bool {
	switch s {
	case 408, 429, 500, 502, 503, 504:
		return true
	}
	return false
}
