package pipeline_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/pipeline"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// sglangPair starts an SGLang prefill/decode pair serving tokenizer dir over GetTokenizer
// ("" = none), registered without any tokenizer label.
func sglangPair(t *testing.T, dir string) (*memory.Workers, *worker.Live, *worker.Live, *grpcsim.Server) {
	t.Helper()
	store := memory.NewWorkers()
	var lives []*worker.Live
	var dec *grpcsim.Server
	for _, role := range []string{grpcsim.RolePrefill, grpcsim.RoleDecode} {
		s, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: "sim-model", TokenizerPath: dir})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		bp := s.BootstrapPort()
		l := worker.NewLive(worker.Worker{ID: role, URL: s.URL(), Role: worker.Role(role), Runtime: worker.RuntimeSGLang,
			Mode: worker.ConnGRPC, BootstrapPort: &bp}, worker.StatusReady)
		require.NoError(t, store.Add(l))
		lives = append(lives, l)
		dec = s
	}
	return store, lives[0], lives[1], dec
}

func newPipeline(t *testing.T, store *memory.Workers) *pipeline.Pipeline {
	t.Helper()
	pool := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = pool.Close() })
	pl := pipeline.New(pipeline.Deps{Config: config.Default(), Engines: pool,
		Text: text.NewRegistry(text.OSFiles{}, pipeline.NewBundleFetcher(store, pool), text.LoadOptions{})})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		_ = pl.Close(ctx)
	})
	return pl
}

// Without a local tokenizer source the model's tokenizer comes from a worker's GetTokenizer
// bundle, and the answer is the detokenized handoff tokens.
func TestTokenizerFromGetTokenizerBundle(t *testing.T) {
	dir := texttest.Dir(t, texttest.Qwen3)
	store, p, d, dsim := sglangPair(t, dir)
	pl := newPipeline(t, store)
	rq, err := handoff.Inspect(handoff.RouteGenerate, []byte(`{"model":"sim-model","text":"bundle","sampling_params":{"max_new_tokens":5}}`))
	require.NoError(t, err)
	rec := httptest.NewRecorder()
	_, err = pl.Attempt(context.Background(), rec, rq, p, d, nil)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var body struct {
		Text string `json:"text"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	dec := text.NewDecoder(tok, text.DecoderOptions{SkipSpecialTokens: true})
	want := ""
	for _, id := range grpcsim.HandoffTokens(tok.Encode("bundle", false), 5) {
		s, _ := dec.Step(id)
		want += s
	}
	want += dec.Flush()
	assert.Equal(t, want, body.Text)
	assert.EqualValues(t, 1, dsim.Stats().HandoffsReceived)
}

// No source and no bundle: 500 tokenizer_not_found, before any leg.
func TestTokenizerNotFound(t *testing.T) {
	store, p, d, dsim := sglangPair(t, "")
	pl := newPipeline(t, store)
	rq, err := handoff.Inspect(handoff.RouteGenerate, []byte(`{"model":"sim-model","text":"x"}`))
	require.NoError(t, err)
	_, err = pl.Attempt(context.Background(), httptest.NewRecorder(), rq, p, d, nil)
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusInternalServerError, e.Status)
	assert.Equal(t, "tokenizer_not_found", e.Code)
	assert.Contains(t, e.Message, "GetTokenizer")
	assert.Zero(t, dsim.Stats().Requests)
}
