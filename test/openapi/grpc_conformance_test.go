package openapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// Over gRPC PD the gateway writes the answers itself (rendered from token ids by its own
// detokenizer, and count_tokens from its tokenizer): every one of them, plain and each
// streamed event, fits the document.
func TestGRPCAnswersFitTheDocument(t *testing.T) {
	t.Parallel()
	dir := texttest.Dir(t, texttest.Qwen3)
	m, err := text.LoadModel(text.OSFiles{}, dir, text.LoadOptions{})
	require.NoError(t, err)
	const model = "sim-model"
	var sims []*grpcsim.Server
	for _, role := range []string{grpcsim.RolePrefill, grpcsim.RoleDecode} {
		s, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: model, TokenizerPath: dir})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		sims = append(sims, s)
	}
	cfg := fleet.DefaultConfig()
	bp := sims[0].BootstrapPort()
	cfg.Prefill = []config.PrefillSpec{{URL: sims[0].URL(), BootstrapPort: &bp}}
	cfg.Decode = []string{sims[1].URL()}
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(model, m); return r }))
	g.WaitWorkers(t, 2)
	v := newValidator(t, g.URL)

	msgs := []map[string]any{{"role": "user", "content": "hello there"}}
	for _, c := range []struct {
		path   string
		body   map[string]any
		stream bool
	}{
		{wire.PathChatCompletions, map[string]any{"model": model, "messages": msgs, "max_tokens": 3}, true},
		{wire.PathCompletions, map[string]any{"model": model, "prompt": "hello there", "max_tokens": 3}, true},
		{wire.PathGenerate, map[string]any{"model": model, "text": "hello there", "sampling_params": map[string]any{"max_new_tokens": 3}}, true},
		{wire.PathMessages, map[string]any{"model": model, "messages": msgs, "max_tokens": 3}, true},
		{wire.PathResponses, map[string]any{"model": model, "input": "hello there", "max_output_tokens": 3, "store": false}, true},
		{wire.PathCountTokens, map[string]any{"model": model, "messages": msgs}, false},
	} {
		status, _ := v.exchange(t, g, c.path, c.body)
		assert.Equal(t, http.StatusOK, status, c.path)
		if c.stream {
			c.body["stream"] = true
			status, events := v.exchange(t, g, c.path, c.body)
			assert.Equal(t, http.StatusOK, status, "%s stream", c.path)
			assert.Positive(t, events, "%s stream has events", c.path)
		}
	}
}
