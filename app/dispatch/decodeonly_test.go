package dispatch_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// localFleet is a vLLM NIXL prefill, a kv_both vLLM decode and a SGLang regular worker
// behind a completions handler with --selective-pd-uncached-tokens n.
func localFleet(t *testing.T, eng *scriptEngine, n int) (http.Handler, []*worker.Live) {
	t.Helper()
	st := memory.NewWorkers()
	ws := []*worker.Live{
		worker.NewLive(worker.Worker{ID: "p", URL: "http://127.0.0.1:10001", Role: worker.RolePrefill,
			Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "NixlConnector"}, worker.StatusReady),
		worker.NewLive(worker.Worker{ID: "d", URL: "http://127.0.0.1:10002", Role: worker.RoleDecode,
			Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "NixlConnector", KVRole: "kv_both"}, worker.StatusReady),
		worker.NewLive(worker.Worker{ID: "r", URL: "http://127.0.0.1:10003", Role: worker.RoleRegular,
			Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP}, worker.StatusReady),
	}
	for _, w := range ws {
		require.NoError(t, st.Add(w))
	}
	o := policy.DefaultOptions()
	o.LoadMetric = policy.LoadTokens
	pp, err := policy.New("power_of_two", policy.LegPrefill, o)
	require.NoError(t, err)
	dp, err := policy.New("power_of_two", policy.LegDecode, o)
	require.NoError(t, err)
	cfg := config.Default()
	cfg.PDDisaggregation = true
	cfg.RetryInitialBackoffMS = 1
	cfg.RetryMaxBackoffMS = 2
	cfg.SelectivePD.UncachedTokens = n
	d := dispatch.New(dispatch.Deps{Config: cfg, Store: st, Engine: eng,
		Selector: selection.New(st, pairing.ModeLenient, pp, dp, nil)})
	for _, r := range d.Routes() {
		if r.Pattern == "POST /v1/completions" {
			return r.Handler, ws
		}
	}
	t.Fatal("no /v1/completions route")
	return nil, nil
}

// localOK answers a decode-only leg like a decode, whatever the worker's role.
func localOK(_ ports.LegRequest, stream bool) *ports.LegResponse {
	if stream {
		return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: &chunkReader{chunks: [][]byte{[]byte(benchEvent), []byte(benchEvent), []byte("data: [DONE]\n\n")}}}
	}
	return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(benchJSON))}
}

func TestDecodeOnlySendsOneLegWithoutHandoffAndFreesItsTokens(t *testing.T) {
	t.Parallel()
	var calls atomic.Int64
	cases := []struct {
		name   string
		stream bool
		fn     func(ctx context.Context, req ports.LegRequest, stream bool) (*ports.LegResponse, error)
		cancel bool
		want   int
	}{
		{name: "success", want: http.StatusOK,
			fn: func(_ context.Context, req ports.LegRequest, s bool) (*ports.LegResponse, error) {
				return localOK(req, s), nil
			}},
		{name: "stream end", stream: true, want: http.StatusOK,
			fn: func(_ context.Context, req ports.LegRequest, s bool) (*ports.LegResponse, error) {
				return localOK(req, s), nil
			}},
		{name: "engine error then retry on the other worker", want: http.StatusOK,
			fn: func(_ context.Context, req ports.LegRequest, s bool) (*ports.LegResponse, error) {
				if calls.Add(1) == 1 {
					return &ports.LegResponse{Status: http.StatusInternalServerError, Header: http.Header{},
						Body: io.NopCloser(strings.NewReader(`{"error":"boom"}`))}, nil
				}
				return localOK(req, s), nil
			}},
		{name: "every attempt fails", want: http.StatusServiceUnavailable,
			fn: func(context.Context, ports.LegRequest, bool) (*ports.LegResponse, error) {
				return &ports.LegResponse{Status: http.StatusServiceUnavailable, Header: http.Header{},
					Body: io.NopCloser(strings.NewReader(`{"error":"busy"}`))}, nil
			}},
		{name: "client cancels mid-leg", cancel: true,
			fn: func(ctx context.Context, _ ports.LegRequest, _ bool) (*ports.LegResponse, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var legs []ports.LegRequest
			eng := &scriptEngine{seen: map[string]int64{}}
			eng.fn = func(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
				mu.Lock()
				legs = append(legs, req)
				mu.Unlock()
				return tc.fn(ctx, req, tc.stream)
			}
			h, ws := localFleet(t, eng, 1<<20)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.cancel {
				go func() {
					for ctx.Err() == nil {
						if ws[1].TokenLoad()+ws[2].TokenLoad() > 0 {
							time.Sleep(5 * time.Millisecond)
							cancel()
							return
						}
						time.Sleep(time.Millisecond)
					}
				}()
			}
			status := serve(h, ctx, tc.stream)
			if !tc.cancel {
				assert.Equal(t, tc.want, status)
			}
			mu.Lock()
			defer mu.Unlock()
			require.NotEmpty(t, legs)
			for _, l := range legs {
				assert.NotEqual(t, worker.RolePrefill, l.Worker.Role, "no prefill leg")
				assert.NotContains(t, string(l.Body), "kv_transfer_params")
				assert.NotContains(t, string(l.Body), "bootstrap_room")
			}
			assert.Positive(t, eng.seen[legs[0].Worker.URL], "the worker's tokens were held while its leg ran")
			assertNoTokenLoad(t, ws)
		})
	}
}

func TestDecodeOnlyThresholdEdgeOnCountedTokens(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		ids     int
		prefill bool
	}{{16, false}, {17, true}} {
		var mu sync.Mutex
		roles := map[worker.Role]int{}
		eng := &scriptEngine{seen: map[string]int64{}}
		eng.fn = func(_ context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
			mu.Lock()
			roles[req.Worker.Role]++
			mu.Unlock()
			if req.Worker.Role == worker.RolePrefill {
				return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
					Body: io.NopCloser(strings.NewReader(nixlPrefillJSON))}, nil
			}
			return localOK(req, false), nil
		}
		h, ws := localFleet(t, eng, 16)
		ids := strings.TrimSuffix(strings.Repeat("7,", tc.ids), ",")
		w := postJSON(h, `{"model":"sim-model","prompt":[`+ids+`],"max_tokens":4}`)
		assert.Equal(t, http.StatusOK, w.status, "%d ids", tc.ids)
		mu.Lock()
		assert.Equal(t, tc.prefill, roles[worker.RolePrefill] == 1, "%d counted ids against N=16: prefill legs %v", tc.ids, roles)
		mu.Unlock()
		assertNoTokenLoad(t, ws)
	}
}

func postJSON(h http.Handler, body string) *discardWriter {
	r := httptest.NewRequest(http.MethodPost, "/v1/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	return w
}
