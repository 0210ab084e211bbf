package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/handoff"
)

func TestEngineErrorCode(t *testing.T) {
	for payload, want := range map[string]int{
		`{"error":{"message":"Internal server error","type":"InternalServerError","param":null,"code":500}}`: 500,
		`{"error":{"message":"bad","code":400}}`:                                  400,
		`{"error":{"message":"no code"}}`:                                         0,
		`{"error":"Internal server error"}`:                                       0,
		`{"error":{"message":"x","code":"500"}}`:                                  0,
		`{"error":{"message":"x","code":7}}`:                                      0,
		`{"choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":null}]}`: 0,
		`not json`: 0,
	} {
		assert.Equal(t, want, handoff.EngineErrorCode([]byte(payload)), payload)
	}
}

func TestRoleOnlyChunk(t *testing.T) {
	for payload, want := range map[string]bool{
		// vLLM's first chat chunk, one and two choices.
		`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`: true,
		`{"choices":[{"index":0,"delta":{"role":"assistant"}},{"index":1,"delta":{"role":"assistant","content":null}}]}`:                                                                      true,
		// Output of any kind.
		`{"choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}`:                                false,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]}`:                                  false,
		`{"choices":[{"index":0,"delta":{"reasoning_content":"hm"}}]}`:                                            false,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0}]}}]}`:                                          false,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":"stop"}]}`:              false,
		`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}},{"index":1,"delta":{"content":"x"}}]}`: false,
		`{"choices":[]}`:                                           false,
		`{"choices":[{"index":0,"text":""}]}`:                      false,
		`{"error":{"message":"Internal server error","code":500}}`: false,
	} {
		assert.Equal(t, want, handoff.RoleOnlyChunk([]byte(payload)), payload)
	}
}

// LineGuard keeps the first payload past the role-only chunks only when asked.
func TestLineGuardFirstOutput(t *testing.T) {
	role := `data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n"
	fail := `data: {"error":{"message":"Internal server error","code":500}}` + "\n\n"
	nop := func([]byte) error { return nil }

	g := handoff.LineGuard{WantFirstOutput: true}
	assert.NoError(t, g.Feed([]byte(role), nop))
	assert.Nil(t, g.FirstOutput, "a role-only chunk is not output")
	assert.NoError(t, g.Feed([]byte(fail+"data: [DONE]\n\n"), nop))
	assert.Equal(t, `{"error":{"message":"Internal server error","code":500}}`, string(g.FirstOutput))
	assert.Equal(t, 500, handoff.EngineErrorCode(g.FirstOutput))

	var off handoff.LineGuard
	assert.NoError(t, off.Feed([]byte(role+fail), nop))
	assert.Nil(t, off.FirstOutput, "not kept unless wanted")
	assert.NotNil(t, off.First)
}
