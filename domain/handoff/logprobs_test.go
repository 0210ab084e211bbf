package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/handoff"
)

func TestPrefillLogprobs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, want string
		ok               bool
	}{
		{"json body", `{"text":"a","meta_info":{"id":"x","input_token_logprobs":[[-0.1,1,null],[-0.2,2,null]]}}`, `[[-0.1,1,null],[-0.2,2,null]]`, true},
		{"sse body: first event carrying the array wins",
			"data: {\"text\":\"\",\"meta_info\":{}}\n\ndata: {\"meta_info\":{\"input_token_logprobs\":[[-1,5,null]]}}\n\ndata: {\"meta_info\":{\"input_token_logprobs\":[[-9,9,null]]}}\n\ndata: [DONE]\n\n",
			`[[-1,5,null]]`, true},
		{"sse body without final blank line", "data: {\"meta_info\":{\"input_token_logprobs\":[]}}\n", `[]`, true},
		{"no logprobs", `{"meta_info":{"id":"x"}}`, ``, false},
		{"logprobs not an array", `{"meta_info":{"input_token_logprobs":null}}`, ``, false},
		{"garbage", `{"meta_info":`, ``, false},
		{"empty", ``, ``, false},
		{"batch array body is not merged", `[{"meta_info":{"input_token_logprobs":[]}}]`, ``, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := handoff.PrefillLogprobs([]byte(tc.body))
			assert.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, string(got))
		})
	}
}

func TestMergeLogprobsNonStreaming(t *testing.T) {
	t.Parallel()
	prefill := []byte(`[[-0.1,1,null],[-0.2,2,null]]`)
	cases := []struct {
		name, decode, want string
		merged             bool
	}{
		{"prefill first, then decode; other fields byte-identical",
			`{"text":"out","meta_info":{"id":"r","input_token_logprobs":[[-0.3,3,null]],"output_token_logprobs":[[-1,7,null]]}}`,
			`{"text":"out","meta_info":{"id":"r","input_token_logprobs":[[-0.1,1,null],[-0.2,2,null],[-0.3,3,null]],"output_token_logprobs":[[-1,7,null]]}}`, true},
		{"empty decode array",
			`{"meta_info":{"input_token_logprobs":[ ]}}`,
			`{"meta_info":{"input_token_logprobs":[[-0.1,1,null],[-0.2,2,null]]}}`, true},
		{"decode without the array is unchanged", `{"meta_info":{"id":"r"}}`, `{"meta_info":{"id":"r"}}`, false},
		{"OpenAI body is unchanged", `{"choices":[{"logprobs":{"content":[]}}]}`, `{"choices":[{"logprobs":{"content":[]}}]}`, false},
		{"unparsable decode body is unchanged", `not json`, `not json`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, merged := handoff.MergeLogprobs(prefill, []byte(tc.decode))
			assert.Equal(t, tc.merged, merged)
			assert.Equal(t, tc.want, string(out))
		})
	}
	out, merged := handoff.MergeLogprobs(nil, []byte(`{"meta_info":{"input_token_logprobs":[]}}`))
	assert.False(t, merged, "no prefill logprobs")
	assert.Equal(t, `{"meta_info":{"input_token_logprobs":[]}}`, string(out))
}

func TestMergeLogprobsEvent(t *testing.T) {
	t.Parallel()
	prefill := []byte(`[[-0.1,1,null]]`)
	cases := []struct {
		name, event, want string
		merged            bool
	}{
		{"data event with the array",
			"data: {\"text\":\"a\",\"meta_info\":{\"input_token_logprobs\":[[-0.5,4,null]]}}\n\n",
			"data: {\"text\":\"a\",\"meta_info\":{\"input_token_logprobs\":[[-0.1,1,null],[-0.5,4,null]]}}\n\n", true},
		{"CRLF framing is normalised on rewrite",
			"data:{\"meta_info\":{\"input_token_logprobs\":[]}}\r\n\r\n",
			"data: {\"meta_info\":{\"input_token_logprobs\":[[-0.1,1,null]]}}\n\n", true},
		// T-HTTP-2: the sentinel is forwarded verbatim; "[DONE]" as text is processed normally.
		{"done sentinel", "data: [DONE]\n\n", "data: [DONE]\n\n", false},
		{"sentinel text in JSON", "data: {\"text\":\"[DONE]\",\"meta_info\":{}}\n\n", "data: {\"text\":\"[DONE]\",\"meta_info\":{}}\n\n", false},
		{"text sentinel with logprobs is merged",
			"data: {\"text\":\"[DONE]\",\"meta_info\":{\"input_token_logprobs\":[]}}\n\n",
			"data: {\"text\":\"[DONE]\",\"meta_info\":{\"input_token_logprobs\":[[-0.1,1,null]]}}\n\n", true},
		{"comment", ": ping\n\n", ": ping\n\n", false},
		{"bad JSON", "data: {oops\n\n", "data: {oops\n\n", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			out, merged := handoff.MergeLogprobsEvent(prefill, []byte(tc.event))
			assert.Equal(t, tc.merged, merged)
			assert.Equal(t, tc.want, string(out))
		})
	}
}
