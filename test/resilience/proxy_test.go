package resilience_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// legProxy is a recording reverse proxy in front of one simulator: the gateway talks to the
// proxy (probes included), the proxy records the handoff ids each inference leg carried —
// the SGLang bootstrap_room, the vLLM kv_transfer_params.transfer_id — and forwards
// everything unchanged, streaming included, except GET /health while Sick.
type legProxy struct {
	URL string
	// Sick makes GET /health answer 503 (the engine behind keeps serving inference), to
	// fail the gateway's health checks on demand.
	Sick atomic.Bool
	mu   sync.Mutex
	ids  []string
}

func newLegProxy(t *testing.T, target string) *legProxy {
	t.Helper()
	u, err := url.Parse(target)
	require.NoError(t, err)
	tr := &http.Transport{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.Transport = tr
	rp.FlushInterval = -1
	p := &legProxy{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/health" && p.Sick.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		if r.Method == http.MethodPost {
			b, _ := io.ReadAll(r.Body)
			_ = r.Body.Close()
			p.record(b)
			r.Body = io.NopCloser(bytes.NewReader(b))
			r.ContentLength = int64(len(b))
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		srv.Close()
		tr.CloseIdleConnections()
	})
	p.URL = srv.URL
	return p
}

func (p *legProxy) record(body []byte) {
	var v struct {
		Room json.RawMessage `json:"bootstrap_room"`
		KV   struct {
			TransferID string `json:"transfer_id"`
		} `json:"kv_transfer_params"`
	}
	if json.Unmarshal(body, &v) != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case len(v.Room) > 0:
		p.ids = append(p.ids, string(v.Room))
	case v.KV.TransferID != "":
		p.ids = append(p.ids, v.KV.TransferID)
	}
}

// IDs returns the handoff ids recorded so far, in arrival order.
func (p *legProxy) IDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...)
}
