package pipeline_test

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/pipeline"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	modelOnce sync.Once
	model     *text.Model
	modelErr  error
)

// sharedModel is the Qwen3 model at dir, parsed once per test binary (seconds under -race).
func sharedModel(t *testing.T, dir string) *text.Model {
	t.Helper()
	modelOnce.Do(func() { model, modelErr = text.LoadModel(text.OSFiles{}, dir, text.LoadOptions{}) })
	require.NoError(t, modelErr)
	return model
}

type rig struct {
	pl   *pipeline.Pipeline
	p, d *grpcsim.Server
	pw   *worker.Live
	dw   *worker.Live
}

// newRig starts an SGLang prefill and decode simulator (mod adjusts them) and a Pipeline
// over a real gRPC pool and tokenizer registry, the decode abort deferred by wait.
func newRig(t *testing.T, wait time.Duration, mod func(role string, c *grpcsim.Config)) *rig {
	t.Helper()
	return newEngineRig(t, grpcsim.EngineSGLang, wait, mod)
}

func newEngineRig(t *testing.T, engine string, wait time.Duration, mod func(role string, c *grpcsim.Config)) *rig {
	t.Helper()
	dir := texttest.Dir(t, texttest.Qwen3)
	r := &rig{}
	for _, role := range []string{grpcsim.RolePrefill, grpcsim.RoleDecode} {
		c := grpcsim.Config{Engine: engine, Role: role, Model: "sim-model"}
		if mod != nil {
			mod(role, &c)
		}
		s, err := grpcsim.Start(c)
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		bp := s.BootstrapPort()
		w := worker.NewLive(worker.Worker{ID: role, URL: s.URL(), Role: worker.Role(role), Runtime: worker.Runtime(engine),
			Mode: worker.ConnGRPC, Models: []string{"sim-model"}, Labels: map[string]string{"tokenizer_path": dir}, BootstrapPort: &bp}, worker.StatusReady)
		if role == grpcsim.RolePrefill {
			r.p, r.pw = s, w
		} else {
			r.d, r.dw = s, w
		}
	}
	pool := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	reg := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
	reg.Put("sim-model", sharedModel(t, dir)) // loaded once per test binary
	r.pl = pipeline.New(pipeline.Deps{Config: config.Default(), Text: reg, Engines: pool, DeferredAbortWait: wait})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		require.NoError(t, r.pl.Close(ctx))
	})
	return r
}

func (r *rig) attempt(t *testing.T, ctx context.Context, body string) (*httptest.ResponseRecorder, bool, error) {
	t.Helper()
	rq, err := handoff.Inspect(handoff.RouteGenerate, []byte(body))
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	committed, err := r.pl.Attempt(ctx, rec, rq, r.pw, r.dw, nil)
	return rec, committed, err
}

// A client that leaves before the decode's first item: the prefill is aborted at once, the
// decode's Abort waits for its first item, at most the deferred wait.
func TestClientGoneDefersDecodeAbort(t *testing.T) {
	const wait = time.Second
	r := newRig(t, wait, func(role string, c *grpcsim.Config) {
		if role == grpcsim.RoleDecode {
			c.Faults = []string{"delay-body:5000"} // headers at once, the first item after 5 s
		}
	})
	// Load the tokenizer with a request refused after the load, before any leg.
	_, _, err := r.attempt(t, context.Background(), `{"text":12}`)
	require.Error(t, err)
	require.Zero(t, r.p.Stats().Requests+r.d.Stats().Requests)

	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, committed, err := r.attempt(t, ctx, `{"text":"the client leaves","sampling_params":{"max_new_tokens":4}}`)
	returned := time.Since(start)
	cancelAt := start.Add(300 * time.Millisecond)
	assert.False(t, committed)
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 499, e.Status)
	assert.Less(t, returned, wait, "the attempt returns when the client leaves, not when the decode is aborted")

	require.Eventually(t, func() bool { return r.p.Stats().Aborted == 1 }, 2*time.Second, 5*time.Millisecond)
	pAbort := time.UnixMilli(r.p.Stats().LastAbortUnixMs)
	assert.Less(t, pAbort.Sub(cancelAt), 500*time.Millisecond, "the prefill is aborted at once")

	require.Eventually(t, func() bool { s := r.d.Stats(); return s.Aborted == 1 && s.AbortRPCs == 1 }, wait+3*time.Second, 10*time.Millisecond,
		"the decode gets its Abort after the deferred wait: %+v", r.d.Stats())
	dAbort := time.UnixMilli(r.d.Stats().LastAbortUnixMs)
	assert.GreaterOrEqual(t, dAbort.Sub(cancelAt), wait-100*time.Millisecond, "the decode's abort waited for its first item")
	assert.Less(t, dAbort.Sub(cancelAt), wait+2*time.Second)
	assert.Zero(t, r.d.Stats().Errors)
}
