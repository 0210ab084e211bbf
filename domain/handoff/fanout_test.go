package handoff_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

func split(t *testing.T, route handoff.Route, body string) []string {
	t.Helper()
	objs, err := handoff.SplitSamples(mustInspect(t, route, body))
	require.NoError(t, err)
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = string(o.Bytes())
	}
	return out
}

func TestSplitSamples(t *testing.T) {
	t.Parallel()
	assert.Equal(t, []string{
		`{"model":"m","n":1,"messages":[],"seed":7,"rid":"abc-0"}`,
		`{"model":"m","n":1,"messages":[],"seed":8,"rid":"abc-1"}`,
		`{"model":"m","n":1,"messages":[],"seed":9,"rid":"abc-2"}`,
	}, split(t, handoff.RouteChat, `{"model":"m","n":3,"messages":[],"seed":7,"rid":"abc"}`), "chat: n, seed and rid per sample, order kept")

	assert.Equal(t, []string{
		`{"prompt":["a","b"],"n":1,"rid":["x-0","y-0"]}`,
		`{"prompt":["a","b"],"n":1,"rid":["x-1","y-1"]}`,
	}, split(t, handoff.RouteCompletions, `{"prompt":["a","b"],"n":2,"rid":["x","y"]}`), "completions batch keeps the prompt list")

	assert.Equal(t, []string{
		`{"text":"hi","sampling_params":{"n":1,"sampling_seed":5,"temperature":1}}`,
		`{"text":"hi","sampling_params":{"n":1,"sampling_seed":6,"temperature":1}}`,
	}, split(t, handoff.RouteGenerate, `{"text":"hi","sampling_params":{"n":2,"sampling_seed":5,"temperature":1}}`), "generate: sampling_params.n")

	one := `{"model":"m","n":1}`
	assert.Equal(t, []string{one}, split(t, handoff.RouteChat, one), "n=1 returns the body itself")
	assert.Equal(t, []string{`{"n":4}`}, split(t, handoff.RouteMessages, `{"n":4}`), "routes without n are not split")

	_, err := handoff.SplitSamples(mustInspect(t, handoff.RouteChat, `{"n":129}`))
	e, ok := errs.As(err)
	require.True(t, ok)
	assert.Equal(t, 400, e.Status)
	assert.Equal(t, "invalid_request", e.Code)
}

func TestMergeSamplesChat(t *testing.T) {
	t.Parallel()
	s0 := `{"id":"c0","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13,"prompt_tokens_details":null}}`
	s1 := `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"B"},"finish_reason":"length"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`
	s2 := `{"id":"c2","object":"chat.completion","choices":[{"message":{"role":"assistant","content":"C"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":1,"total_tokens":11}}`
	out, err := handoff.MergeSamples(handoff.RouteChat, [][]byte{[]byte(s0), []byte(s1), []byte(s2)})
	require.NoError(t, err)
	assert.Equal(t, `{"id":"c0","object":"chat.completion","choices":[`+
		`{"index":0,"message":{"role":"assistant","content":"A"},"finish_reason":"stop"},`+
		`{"index":1,"message":{"role":"assistant","content":"B"},"finish_reason":"length"},`+
		`{"message":{"role":"assistant","content":"C"},"finish_reason":"stop","index":2}],`+
		`"usage":{"prompt_tokens":10,"completion_tokens":9,"total_tokens":19,"prompt_tokens_details":null}}`, string(out))
}

func TestMergeSamplesCompletionsBatch(t *testing.T) {
	t.Parallel()
	// Two prompts, n=2: sample s answers both prompts; merged index = prompt*n + sample.
	s0 := `{"id":"a","choices":[{"index":0,"text":"p0s0"},{"index":1,"text":"p1s0"}]}`
	s1 := `{"id":"b","choices":[{"index":0,"text":"p0s1"},{"index":1,"text":"p1s1"}]}`
	out, err := handoff.MergeSamples(handoff.RouteCompletions, [][]byte{[]byte(s0), []byte(s1)})
	require.NoError(t, err)
	assert.Equal(t, `{"id":"a","choices":[{"index":0,"text":"p0s0"},{"index":1,"text":"p0s1"},{"index":2,"text":"p1s0"},{"index":3,"text":"p1s1"}]}`, string(out),
		"no usage anywhere: none added")
}

func TestMergeSamplesGenerate(t *testing.T) {
	t.Parallel()
	out, err := handoff.MergeSamples(handoff.RouteGenerate, [][]byte{[]byte(` {"text":"a"} `), []byte(`{"text":"b"}`)})
	require.NoError(t, err)
	assert.Equal(t, `[{"text":"a"},{"text":"b"}]`, string(out))

	out, err = handoff.MergeSamples(handoff.RouteGenerate, [][]byte{[]byte(`[{"t":"p0s0"},{"t":"p1s0"}]`), []byte(`[{"t":"p0s1"},{"t":"p1s1"}]`)})
	require.NoError(t, err)
	assert.Equal(t, `[{"t":"p0s0"},{"t":"p0s1"},{"t":"p1s0"},{"t":"p1s1"}]`, string(out))
}

func TestMergeSamplesErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		route  handoff.Route
		bodies []string
		msg    string
	}{
		{"no bodies", handoff.RouteChat, nil, "no responses"},
		{"bad json", handoff.RouteChat, []string{`{"choices":[]}`, `{`}, "response 1"},
		{"no choices", handoff.RouteCompletions, []string{`{"id":"x"}`}, "no choices array"},
		{"batch size mismatch", handoff.RouteGenerate, []string{`[{},{}]`, `[{}]`}, "has 1 items, response 0 has 2"},
		{"scalar generate body", handoff.RouteGenerate, []string{`3`}, "is a number"},
		{"route without n", handoff.RouteMessages, []string{`{}`}, "has no samples"},
	}
	for _, tc := range cases {
		var in [][]byte
		for _, b := range tc.bodies {
			in = append(in, []byte(b))
		}
		_, err := handoff.MergeSamples(tc.route, in)
		require.Error(t, err, tc.name)
		assert.Contains(t, err.Error(), tc.msg, tc.name)
	}
}

func TestFanInChatStream(t *testing.T) {
	t.Parallel()
	f := handoff.NewFanIn(handoff.RouteChat, 2)
	type step struct {
		sample     int
		event, out string
		kind       handoff.EventKind
	}
	steps := []step{
		{1, "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}],\"usage\":null}\n\n",
			"data: {\"id\":\"x\",\"choices\":[{\"index\":1,\"delta\":{\"role\":\"assistant\"}}],\"usage\":null}\n\n", handoff.EventForward},
		{0, "data: {\"id\":\"y\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n",
			"data: {\"id\":\"y\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"hi\"}}]}\n\n", handoff.EventForward},
		{0, ": keep-alive\n\n", ": keep-alive\n\n", handoff.EventForward},
		{0, "data: {\"id\":\"y\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n\n", "", handoff.EventHeld},
		{0, "data: [DONE]\n\n", "", handoff.EventDone},
		{1, "data: {\"id\":\"x\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":7,\"total_tokens\":11}}\n\n", "", handoff.EventHeld},
		{1, "data: [DONE]\n\n", "", handoff.EventDone},
	}
	for i, s := range steps {
		buf := []byte(s.event)
		out, kind := f.Event(s.sample, buf)
		assert.Equal(t, s.kind, kind, "step %d", i)
		assert.Equal(t, s.out, string(out), "step %d", i)
		for j := range buf { // the relay reuses its buffer: held state must not alias it
			buf[j] = 'X'
		}
	}
	assert.Equal(t, "data: {\"id\":\"y\",\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":9,\"total_tokens\":13}}\n\n", string(f.Final()))
	assert.Equal(t, "held", handoff.EventHeld.String())
}

func TestFanInErrorsAndGenerate(t *testing.T) {
	t.Parallel()
	f := handoff.NewFanIn(handoff.RouteCompletions, 3)
	ev := "data: {\"error\":{\"message\":\"boom\"}}\n\n"
	out, kind := f.Event(2, []byte(ev))
	assert.Equal(t, handoff.EventError, kind)
	assert.Equal(t, ev, string(out))
	assert.Nil(t, f.Final(), "no usage chunk seen")

	g := handoff.NewFanIn(handoff.RouteGenerate, 2)
	out, kind = g.Event(1, []byte("data: {\"text\":\"a\",\"meta_info\":{\"id\":\"r\"}}\n\n"))
	assert.Equal(t, handoff.EventForward, kind)
	assert.Equal(t, "data: {\"text\":\"a\",\"meta_info\":{\"id\":\"r\"},\"index\":1}\n\n", string(out))
	out, _ = g.Event(1, []byte("data: {\"index\":1,\"text\":\"b\"}\n\n"))
	assert.Equal(t, "data: {\"index\":3,\"text\":\"b\"}\n\n", string(out), "batch item 1, sample 1 of 2")
}

func TestFanInConcurrentSamples(t *testing.T) {
	t.Parallel()
	const n = 8
	f := handoff.NewFanIn(handoff.RouteChat, n)
	var wg sync.WaitGroup
	for s := range n {
		wg.Go(func() {
			for range 50 {
				_, kind := f.Event(s, []byte("data: {\"choices\":[{\"index\":0,\"delta\":{}}]}\n\n"))
				assert.Equal(t, handoff.EventForward, kind)
			}
			_, kind := f.Event(s, []byte("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":1}}\n\n"))
			assert.Equal(t, handoff.EventHeld, kind)
		})
	}
	wg.Wait()
	assert.Equal(t, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":8,\"total_tokens\":11}}\n\n", string(f.Final()))
}
