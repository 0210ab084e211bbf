package app

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

// unmatched answers requests that match no route of mux in the gateway's JSON error shape
// with X-SMG-Error-Code, like every other error: 404 not_found for an unknown path, 405
// method_not_allowed (with the mux's Allow header) for a known path and another method.
// ServeMux's own answers are plain text. Matched requests go to mux untouched.
func unmatched(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r)
			return
		}
		probe := &statusProbe{header: http.Header{}}
		h.ServeHTTP(probe, r) // the mux's NotFound or 405 handler: writes a status and a line
		admin := r.URL.Path == "/workers" || strings.HasPrefix(r.URL.Path, "/workers/")
		if admin && (probe.status == http.StatusNotFound || probe.status == http.StatusMethodNotAllowed) {
			workerAPIError(w, r, probe)
			return
		}
		switch probe.status {
		case http.StatusMethodNotAllowed:
			if allow := probe.header.Get("Allow"); allow != "" {
				w.Header().Set("Allow", allow)
			}
			dispatch.WriteError(w, errs.New(http.StatusMethodNotAllowed, wire.CodeMethodNotAllowed,
				"method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, probe.header.Get("Allow")))
		case http.StatusNotFound:
			dispatch.WriteError(w, errs.New(http.StatusNotFound, wire.CodeNotFound, "no route for %s %s", r.Method, r.URL.Path))
		default: // a redirect (trailing slash, cleaned path): let the mux answer it
			mux.ServeHTTP(w, r)
		}
	})
}

// workerAPIError answers an unmatched /workers request in the worker-management API's own
// shape {"error":"<text>","code":"<CODE>"} (smg-spec.md §3.2), like its other errors.
func workerAPIError(w http.ResponseWriter, r *http.Request, probe *statusProbe) {
	status, code := http.StatusNotFound, wire.CodeWorkerRouteNotFound
	msg := "no route for " + r.Method + " " + r.URL.Path
	if probe.status == http.StatusMethodNotAllowed {
		status, code = http.StatusMethodNotAllowed, wire.CodeWorkerMethodNotAllowed
		msg = "method " + r.Method + " is not allowed on " + r.URL.Path + " (allowed: " + probe.header.Get("Allow") + ")"
		w.Header().Set("Allow", probe.header.Get("Allow"))
	}
	b, _ := json.Marshal(map[string]string{"error": msg, "code": code})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// statusProbe records what the mux's fallback handler would answer, writing nothing.
type statusProbe struct {
	header http.Header
	status int
}

func (p *statusProbe) Header() http.Header { return p.header }
func (p *statusProbe) WriteHeader(s int) {
	if p.status == 0 {
		p.status = s
	}
}
func (p *statusProbe) Write(b []byte) (int, error) {
	p.WriteHeader(http.StatusOK)
	return len(b), nil
}
