package dispatch

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/policy"
)

func TestSizeRequestSetsTokensWhenTheGatewayKnowsThem(t *testing.T) {
	t.Parallel()
	text, err := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"m","prompt":"a long text prompt","max_tokens":4}`))
	require.NoError(t, err)
	var p policy.Request
	sizeRequest(&p, text, nil)
	assert.Zero(t, p.Tokens, "a byte estimate is not a token count")
	assert.Positive(t, p.PromptTokens)
	assert.Equal(t, 4, p.DecodeTokens)

	p = policy.Request{}
	sizeRequest(&p, text, func() []uint32 { return []uint32{1, 2, 3, 4, 5, 6, 7} })
	assert.Equal(t, 7, p.Tokens, "a tokenized prompt's length")
	assert.Equal(t, 7, p.PromptTokens)
	assert.Len(t, p.TokenIDs, 7)

	ids, err := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"m","prompt":[5,6,7]}`))
	require.NoError(t, err)
	p = policy.Request{}
	sizeRequest(&p, ids, func() []uint32 { return nil })
	assert.Equal(t, 3, p.Tokens, "token ids in the body are counted")
	assert.Nil(t, p.TokenIDs)
}
