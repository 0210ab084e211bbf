package fleet

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Recorded is one inference request a Recorder received.
type Recorded struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Respond answers one recorded POST; body is what the request carried.
type Respond func(w http.ResponseWriter, r *http.Request, body []byte)

// Recorder is a scriptable engine stand-in on 127.0.0.1 for assertions the simulator
// cannot make (the exact JSON a leg carried, which paths a worker saw). It answers the
// probes the gateway sends — GET /health (200), GET /v1/models (one model, owned_by the
// runtime so detection finds it), GET /version (vLLM) — and records every POST before
// passing it to respond. It is closed at cleanup.
type Recorder struct {
	// URL is "http://127.0.0.1:<port>".
	URL string

	srv     *http.Server
	mu      sync.Mutex
	reqs    []Recorded
	respond Respond
}

// NewRecorder starts a Recorder for runtime ("sglang" or "vllm") serving model. A nil
// respond answers 200 {} to every POST.
func NewRecorder(t testing.TB, runtime, model string, respond Respond) *Recorder {
	t.Helper()
	if respond == nil {
		respond = func(w http.ResponseWriter, _ *http.Request, _ []byte) { WriteJSON(w, http.StatusOK, `{}`) }
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	rec := &Recorder{URL: "http://" + ln.Addr().String(), respond: respond}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		b, _ := json.Marshal(map[string]any{"object": "list", "data": []map[string]any{{"id": model, "object": "model", "owned_by": runtime}}})
		WriteJSON(w, http.StatusOK, string(b))
	})
	if runtime == "vllm" {
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { WriteJSON(w, http.StatusOK, `{"version":"0.11.0"}`) })
	}
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, Recorded{Path: r.URL.Path, Header: r.Header.Clone(), Body: b})
		rec.mu.Unlock()
		rec.respond(w, r, b)
	})
	rec.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = rec.srv.Serve(ln) }() // returns http.ErrServerClosed at cleanup
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if rec.srv.Shutdown(ctx) != nil {
			_ = rec.srv.Close()
		}
	})
	return rec
}

// Requests returns a copy of the POSTs received so far, in arrival order.
func (r *Recorder) Requests() []Recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Recorded(nil), r.reqs...)
}

// WriteJSON writes body with Content-Type application/json and status.
func WriteJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}
