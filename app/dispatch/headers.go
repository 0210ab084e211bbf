package dispatch

import (
	"net/http"
	"strings"
)

// forwardHeaders copies the client headers an engine may see (smg-spec.md §2.5.4): an allow
// list — Authorization, W3C trace context, the routing-key header, and the request-id
// headers of --request-id-headers (requestIDs, case-insensitive), which the Guard has
// checked. Other request-id look-alikes (X-Request-Id-*, an unlisted X-Correlation-Id) are
// not forwarded: an engine reads its request id from them (vLLM takes X-Request-Id), so only
// the operator's list may set it. Everything else (cookies, hop-by-hop, Host) stays here.
func forwardHeaders(in http.Header, requestIDs []string) http.Header {
	out := make(http.Header, 4)
	for k, vs := range in {
		if strings.EqualFold(k, "authorization") || strings.EqualFold(k, "traceparent") ||
			strings.EqualFold(k, "tracestate") || strings.EqualFold(k, "x-smg-routing-key") {
			out[k] = vs
			continue
		}
		for _, h := range requestIDs {
			if strings.EqualFold(h, k) {
				out[k] = vs
				break
			}
		}
	}
	return out
}

// hopByHop lists response headers never relayed from an engine to the client
// (smg-spec.md §2.8.1), plus Content-Length, which the relay recomputes.
var hopByHop = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Proxy-Authenticate": true,
	"Proxy-Authorization": true, "Te": true, "Trailer": true, "Trailers": true,
	"Transfer-Encoding": true, "Upgrade": true, "Content-Encoding": true,
	"Host": true, "Content-Length": true,
}

// copyResponseHeaders relays an engine's response headers minus hop-by-hop ones. Headers
// the gateway already set (the request id echoed by the middleware) are kept: the client
// sees the gateway's X-Request-Id, not the engine's.
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		ck := http.CanonicalHeaderKey(k)
		if hopByHop[ck] {
			continue
		}
		if _, set := dst[ck]; set {
			continue
		}
		dst[k] = vs
	}
}
