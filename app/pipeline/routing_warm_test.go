package pipeline_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/pipeline"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

// A fleet of HTTP workers never runs prepare, which loads the tokenizer on gRPC: the first
// routing request starts loading it from --tokenizer-path, and once loaded the prompts are
// tokenized before selection.
func TestRoutingTokensLoadsTheTokenizerForHTTPFleets(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.TokenizerPath = texttest.Dir(t, texttest.Qwen3)
	pl := pipeline.New(pipeline.Deps{Config: cfg, Text: text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})})
	t.Cleanup(func() { _ = pl.Close(t.Context()) })
	rq, err := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"qwen","prompt":"the same long system prompt","max_tokens":1}`))
	require.NoError(t, err)
	assert.Nil(t, pl.RoutingTokens(rq), "not loaded yet: approximate routing for this one")
	var ids []uint32
	require.Eventually(t, func() bool { ids = pl.RoutingTokens(rq); return len(ids) > 0 }, 60*time.Second, 20*time.Millisecond)
	assert.Equal(t, texttest.Tokenizer(t, texttest.Qwen3).Encode("the same long system prompt", false), ids)
}
