package app

import "net/http"

// limitBody caps request bodies at n bytes (413 via http.MaxBytesReader, as
// http.MaxBytesHandler does) but sets r.Body on the request it was given instead of serving
// a copy: the ServeMux then records the matched pattern (r.Pattern) on the same *Request the
// outer handlers hold, so the server span is named by route and carries http.route.
// http.MaxBytesHandler's copy hid the pattern from every handler outside it.
func limitBody(next http.Handler, n int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, n)
		next.ServeHTTP(w, r)
	})
}
