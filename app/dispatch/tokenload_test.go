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
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// scriptEngine answers legs through fn and records the token load each worker had while
// its leg was being sent.
type scriptEngine struct {
	fn   func(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error)
	mu   sync.Mutex
	seen map[string]int64 // worker URL -> max TokenLoad observed at Send
}

func (e *scriptEngine) Send(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	e.mu.Lock()
	e.seen[req.Worker.URL] = max(e.seen[req.Worker.URL], req.Worker.TokenLoad())
	e.mu.Unlock()
	return e.fn(ctx, req)
}

func okLeg(req ports.LegRequest, stream bool) *ports.LegResponse {
	if req.Worker.Role == worker.RoleDecode && stream {
		return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"text/event-stream"}},
			Body: &chunkReader{chunks: [][]byte{[]byte(benchEvent), []byte(benchEvent), []byte("data: [DONE]\n\n")}}}
	}
	return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(benchJSON))}
}

// tokenFleet is two SGLang prefills and two decodes behind a completions handler.
func tokenFleet(t *testing.T, eng *scriptEngine) (http.Handler, []*worker.Live) {
	t.Helper()
	return tokenFleetOf(t, eng, worker.RuntimeSGLang)
}

// tokenFleetOf is tokenFleet on runtime rt (vLLM workers use NIXL).
func tokenFleetOf(t *testing.T, eng *scriptEngine, rt worker.Runtime) (http.Handler, []*worker.Live) {
	t.Helper()
	st := memory.NewWorkers()
	bp := 8998
	var ws []*worker.Live
	for i, role := range []worker.Role{worker.RolePrefill, worker.RolePrefill, worker.RoleDecode, worker.RoleDecode} {
		w := worker.Worker{ID: string(role) + string(rune('0'+i)), URL: "http://127.0.0.1:" + string(rune('1'+i)) + "0000",
			Role: role, Runtime: rt, Mode: worker.ConnHTTP}
		switch {
		case rt == worker.RuntimeVLLM:
			w.KVConnector = "NixlConnector"
		case role == worker.RolePrefill:
			w.BootstrapPort = &bp
		}
		l := worker.NewLive(w, worker.StatusReady)
		require.NoError(t, st.Add(l))
		ws = append(ws, l)
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

func assertNoTokenLoad(t *testing.T, ws []*worker.Live) {
	t.Helper()
	for _, w := range ws {
		assert.Zero(t, w.PromptTokens(), "%s: prompt tokens left in flight", w.ID)
		assert.Zero(t, w.DecodeTokens(), "%s: decode tokens left in flight", w.ID)
		assert.Zero(t, w.Load(), "%s: requests left in flight", w.ID)
	}
}

func serve(h http.Handler, ctx context.Context, stream bool) int {
	body := `{"model":"sim-model","prompt":"` + strings.Repeat("word ", 200) + `","max_tokens":32,"stream":` +
		map[bool]string{true: "true", false: "false"}[stream] + `}`
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/completions", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	w := &discardWriter{h: http.Header{}}
	h.ServeHTTP(w, r)
	return w.status
}

func TestTokenLoadReturnsToZeroOnEveryExit(t *testing.T) {
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
				return okLeg(req, s), nil
			}},
		{name: "stream end", stream: true, want: http.StatusOK,
			fn: func(_ context.Context, req ports.LegRequest, s bool) (*ports.LegResponse, error) {
				return okLeg(req, s), nil
			}},
		{name: "engine error then retry to another pair", want: http.StatusOK,
			fn: func(_ context.Context, req ports.LegRequest, s bool) (*ports.LegResponse, error) {
				if req.Worker.Role == worker.RoleDecode && calls.Add(1) == 1 {
					return &ports.LegResponse{Status: http.StatusInternalServerError, Header: http.Header{},
						Body: io.NopCloser(strings.NewReader(`{"error":"boom"}`))}, nil
				}
				return okLeg(req, s), nil
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
			eng := &scriptEngine{seen: map[string]int64{}}
			eng.fn = func(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
				return tc.fn(ctx, req, tc.stream)
			}
			h, ws := tokenFleet(t, eng)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if tc.cancel {
				go func() {
					for {
						for _, w := range ws {
							if w.TokenLoad() > 0 {
								time.Sleep(5 * time.Millisecond)
								cancel()
								return
							}
						}
						if ctx.Err() != nil {
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
			eng.mu.Lock()
			var peak int64
			for _, v := range eng.seen {
				peak = max(peak, v)
			}
			eng.mu.Unlock()
			assert.Positive(t, peak, "the legs were counted while in flight")
			assertNoTokenLoad(t, ws)
		})
	}
}

func TestPrefillTokensAreFreedWhenThePrefillLegEnds(t *testing.T) {
	t.Parallel()
	for _, rt := range []worker.Runtime{worker.RuntimeSGLang, worker.RuntimeVLLM} {
		t.Run(string(rt), func(t *testing.T) {
			t.Parallel()
			var prefill *worker.Live
			var mu sync.Mutex
			var duringDecode, decodeOwn int64 = -1, -1
			eng := &scriptEngine{seen: map[string]int64{}}
			eng.fn = func(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
				if req.Worker.Role == worker.RolePrefill {
					mu.Lock()
					prefill = req.Worker
					mu.Unlock()
					body := benchJSON
					if rt == worker.RuntimeVLLM {
						body = nixlPrefillJSON
					}
					return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}},
						Body: io.NopCloser(strings.NewReader(body))}, nil
				}
				// The decode answers only once the prefill leg is over (SGLang runs both at
				// once): its tokens must be gone from the prefill while the decode still runs.
				var pl int64 = -1
				for range 2000 {
					mu.Lock()
					p := prefill
					mu.Unlock()
					if p != nil {
						if pl = p.TokenLoad(); pl == 0 {
							break
						}
					}
					time.Sleep(time.Millisecond)
				}
				mu.Lock()
				duringDecode, decodeOwn = pl, req.Worker.TokenLoad()
				mu.Unlock()
				return okLeg(req, false), nil
			}
			h, ws := tokenFleetOf(t, eng, rt)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.Equal(t, http.StatusOK, serve(h, ctx, false))
			mu.Lock()
			defer mu.Unlock()
			assert.Zero(t, duringDecode, "the prefill's tokens were freed when its leg ended")
			assert.Positive(t, decodeOwn, "the decode still holds its tokens")
			assertNoTokenLoad(t, ws)
		})
	}
}

// countingPipeline is a GRPCPipeline that "tokenizes" the prompt to n tokens and records
// the token load of both workers then.
type countingPipeline struct {
	n          int
	prefillTok int64
	decodeTok  int64
}

func (c *countingPipeline) Attempt(ctx context.Context, w http.ResponseWriter, _ *handoff.Request, p, dc *worker.Live, _ http.Header) (bool, error) {
	dispatch.PromptTokensCounted(ctx, c.n)
	c.prefillTok, c.decodeTok = p.TokenLoad(), dc.TokenLoad()
	w.WriteHeader(http.StatusOK)
	return true, nil
}

func (*countingPipeline) CountTokens(context.Context, http.ResponseWriter, *handoff.Request, *worker.Live) error {
	return nil
}

func TestGRPCPipelineReplacesTheEstimatedPrompt(t *testing.T) {
	t.Parallel()
	st := memory.NewWorkers()
	var ws []*worker.Live
	for i, role := range []worker.Role{worker.RolePrefill, worker.RoleDecode} {
		l := worker.NewLive(worker.Worker{ID: string(role), URL: "http://127.0.0.1:" + string(rune('1'+i)) + "0001",
			Role: role, Runtime: worker.RuntimeSGLang, Mode: worker.ConnGRPC}, worker.StatusReady)
		require.NoError(t, st.Add(l))
		ws = append(ws, l)
	}
	pp, err := policy.New("round_robin", policy.LegPrefill, policy.DefaultOptions())
	require.NoError(t, err)
	dp, err := policy.New("round_robin", policy.LegDecode, policy.DefaultOptions())
	require.NoError(t, err)
	cfg := config.Default()
	cfg.PDDisaggregation = true
	pl := &countingPipeline{n: 7}
	d := dispatch.New(dispatch.Deps{Config: cfg, Store: st, Engine: &scriptEngine{seen: map[string]int64{}}, GRPC: pl,
		Selector: selection.New(st, pairing.ModeLenient, pp, dp, nil)})
	var h http.Handler
	for _, r := range d.Routes() {
		if r.Pattern == "POST /v1/completions" {
			h = r.Handler
		}
	}
	require.NotNil(t, h)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.Equal(t, http.StatusOK, serve(h, ctx, false)) // a ~1000-byte body: ~250 estimated
	assert.Equal(t, int64(7), pl.prefillTok, "the counted prompt replaced the estimate")
	assert.Equal(t, int64(7+32), pl.decodeTok, "prompt + max_tokens")
	assertNoTokenLoad(t, ws)
}
