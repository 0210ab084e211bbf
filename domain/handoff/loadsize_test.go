package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/handoff"
)

func TestDecodeTokens(t *testing.T) {
	t.Parallel()
	def := handoff.DefaultDecodeTokens
	cases := []struct {
		route handoff.Route
		body  string
		want  int
	}{
		{handoff.RouteChat, `{"max_tokens":64}`, 64},
		{handoff.RouteChat, `{"max_completion_tokens":32,"max_tokens":64}`, 32},
		{handoff.RouteChat, `{"max_tokens":64,"n":3}`, 192},
		{handoff.RouteChat, `{}`, def},
		{handoff.RouteChat, `{"max_tokens":null}`, def},
		{handoff.RouteChat, `{"max_tokens":0}`, def},
		{handoff.RouteChat, `{"max_tokens":-5}`, def},
		{handoff.RouteChat, `{"max_tokens":"64"}`, def},
		{handoff.RouteCompletions, `{"prompt":["a","b"],"max_tokens":10}`, 20},
		{handoff.RouteMessages, `{"max_tokens":7}`, 7},
		{handoff.RouteResponses, `{"max_output_tokens":9,"max_tokens":99}`, 9},
		{handoff.RouteGenerate, `{"text":"x","sampling_params":{"max_new_tokens":5}}`, 5},
		{handoff.RouteGenerate, `{"text":"x","max_tokens":5}`, def},
	}
	for _, tc := range cases {
		r, err := handoff.Inspect(tc.route, []byte(tc.body))
		require.NoError(t, err)
		assert.Equal(t, tc.want, r.DecodeTokens(def), "%s %s", tc.route, tc.body)
	}
}

func TestLoadPromptTokens(t *testing.T) {
	t.Parallel()
	r, err := handoff.Inspect(handoff.RouteGenerate, []byte(`{"input_ids":[[1,2,3],[4,5,6]]}`))
	require.NoError(t, err)
	n, counted := r.LoadPromptTokens()
	assert.Equal(t, 6, n, "token ids are counted, for every prompt of a batch")
	assert.True(t, counted)

	body := `{"messages":[{"role":"user","content":"` + string(make400('a')) + `"}]}`
	r, err = handoff.Inspect(handoff.RouteChat, []byte(body))
	require.NoError(t, err)
	n, counted = r.LoadPromptTokens()
	assert.Equal(t, len(body)/handoff.BytesPerToken, n, "text is estimated from the body's bytes")
	assert.False(t, counted)

	r, err = handoff.Inspect(handoff.RouteChat, []byte(`{}`))
	require.NoError(t, err)
	n, _ = r.LoadPromptTokens()
	assert.Equal(t, 1, n, "at least one token")
}

func make400(c byte) []byte {
	b := make([]byte, 400)
	for i := range b {
		b[i] = c
	}
	return b
}
