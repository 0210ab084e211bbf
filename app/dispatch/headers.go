package dispatch

import (
	"net/http"
	"strings"
)

// forwardHeaders copies the client headers an engine may see (smg-spec.md §2.5.4): an allow
// list — Authorization, X-Request-Id (and X-Request-Id-*), X-Correlation-Id, W3C trace
// context and the routing-key header. Everything else (cookies, hop-by-hop, Host) stays here.
func forwardHeaders(in http.Header) http.Header {
	out := make(http.Header, 4)
	for k, vs := range in {
		lk := strings.ToLower(k)
		switch {
		case lk == "authorization", lk == "x-request-id", lk == "x-correlation-id",
			lk == "traceparent", lk == "tracestate", lk == "x-smg-routing-key",
			strings.HasPrefix(lk, "x-request-id-"):
			out[k] = vs
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
