package edge_test

import (
	"context"
	"io"
	"net/http"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// heapInUse is the live heap after two forced collections (bytes).
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Not parallel: it measures the process heap.
func TestLargeBodyLeavesNoHeapBehind(t *testing.T) {
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1})
	g := f.Gateway
	small := `{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2}`
	r := g.Post(t, "/v1/chat/completions", small, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	before := heapInUse()

	// 50 MB, mostly in a field the engines ignore, so the simulators do not tokenize it.
	body := []byte(`{"model":"sim-model","messages":[{"role":"user","content":"hi"}],"max_tokens":2,"padding":"` + strings.Repeat("x", 50<<20) + `"}`)
	r = g.Post(t, "/v1/chat/completions", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	g.Client.CloseIdleConnections()
	debug.FreeOSMemory()
	after := heapInUse()
	t.Logf("live heap: %.1f MB before, %.1f MB after a 50 MB request", float64(before)/(1<<20), float64(after)/(1<<20))
	assert.Less(t, int64(after)-int64(before), int64(16<<20), "a 50 MB body left its buffers in use")
}

func TestChunkedBodyIsCappedLikeAnnouncedOne(t *testing.T) {
	t.Parallel()
	cfg := fleet.DefaultConfig()
	cfg.MaxPayloadSize = 1 << 20
	g := fleet.StartGateway(t, cfg)
	for _, tc := range []struct {
		name string
		size int64 // -1: chunked
	}{{"chunked", -1}, {"announced", 2 << 20}} {
		t.Run(tc.name, func(t *testing.T) {
			body := io.MultiReader(strings.NewReader(`{"model":"m","padding":"`), io.LimitReader(zeros{}, 2<<20), strings.NewReader(`"}`))
			req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, g.URL+"/v1/completions", body)
			require.NoError(t, err)
			req.ContentLength = tc.size
			if tc.size > 0 {
				req.Body = io.NopCloser(io.LimitReader(body, tc.size))
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := g.Client.Do(req)
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode, "%s", b)
			assert.Equal(t, "payload_too_large", resp.Header.Get("X-SMG-Error-Code"))
			assert.Equal(t, "payload_too_large", errorCode(t, b))
		})
	}
}

// zeros reads '0' bytes forever.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = '0'
	}
	return len(p), nil
}
