package e2e_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// model is the simulators' default served model.
const model = "sim-model"

// api is one generation route as a client calls it: how to build a body, which prompt the
// simulator sees (for sim.HandoffText), and where the generated text is in the answer.
type api struct {
	name, path string
	// body builds the client body for a text prompt with maxTokens output tokens.
	body func(prompt string, maxTokens int, stream bool) map[string]any
	// simPrompt is the prompt string the simulator renders from the client prompt.
	simPrompt func(prompt string) string
	// text reads the generated text of a non-streaming answer.
	text func(t testing.TB, body map[string]any) string
	// streamText concatenates the generated text of a streamed answer.
	streamText func(t testing.TB, events []fleet.Event) string
	// done reports whether the stream ends with data: [DONE] (OpenAI and SGLang shapes;
	// Anthropic and Responses streams end with their own terminal event).
	done bool
}

func userPrompt(p string) string { return sim.ChatPrompt(sim.Message{Role: "user", Content: p}) }
func rawPrompt(p string) string  { return p }

func withStream(m map[string]any, stream bool) map[string]any {
	if stream {
		m["stream"] = true
	}
	return m
}

// path walks a decoded JSON value: string keys index objects, ints index arrays.
func path(t testing.TB, v any, keys ...any) any {
	t.Helper()
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			require.True(t, ok, "want an object for key %q, got %v", k, v)
			v = m[k]
		case int:
			l, ok := v.([]any)
			require.True(t, ok, "want an array for index %d, got %v", k, v)
			require.Less(t, k, len(l), "index %d out of range in %v", k, v)
			v = l[k]
		}
	}
	return v
}

func str(t testing.TB, v any, keys ...any) string {
	t.Helper()
	s, ok := path(t, v, keys...).(string)
	require.True(t, ok, "want a string at %v in %v", keys, v)
	return s
}

// joinEvents concatenates the string at keys of every data event for which keep is true.
func joinEvents(t testing.TB, events []fleet.Event, keep func(fleet.Event, map[string]any) bool, keys ...any) string {
	t.Helper()
	var b strings.Builder
	for _, e := range events {
		if e.Done() {
			continue
		}
		m := e.JSON(t)
		if keep != nil && !keep(e, m) {
			continue
		}
		if s, ok := pathOK(m, keys...).(string); ok {
			b.WriteString(s)
		}
	}
	return b.String()
}

// pathOK is path without failing: nil when a key is missing.
func pathOK(v any, keys ...any) any {
	for _, k := range keys {
		switch k := k.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			l, ok := v.([]any)
			if !ok || k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

var (
	apiChat = api{name: "chat", path: "/v1/chat/completions", done: true,
		body: func(p string, n int, s bool) map[string]any {
			return withStream(map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": p}}, "max_tokens": n}, s)
		},
		simPrompt: userPrompt,
		text:      func(t testing.TB, b map[string]any) string { return str(t, b, "choices", 0, "message", "content") },
		streamText: func(t testing.TB, ev []fleet.Event) string {
			return joinEvents(t, ev, nil, "choices", 0, "delta", "content")
		}}
	apiCompletions = api{name: "completions", path: "/v1/completions", done: true,
		body: func(p string, n int, s bool) map[string]any {
			return withStream(map[string]any{"model": model, "prompt": p, "max_tokens": n}, s)
		},
		simPrompt:  rawPrompt,
		text:       func(t testing.TB, b map[string]any) string { return str(t, b, "choices", 0, "text") },
		streamText: func(t testing.TB, ev []fleet.Event) string { return joinEvents(t, ev, nil, "choices", 0, "text") }}
	apiGenerate = api{name: "generate", path: "/generate", done: true,
		body: func(p string, n int, s bool) map[string]any {
			return withStream(map[string]any{"model": model, "text": p, "sampling_params": map[string]any{"max_new_tokens": n}}, s)
		},
		simPrompt: rawPrompt,
		text:      func(t testing.TB, b map[string]any) string { return str(t, b, "text") },
		// /generate streams the cumulative text: the last event holds all of it.
		streamText: func(t testing.TB, ev []fleet.Event) string {
			last := ""
			for _, e := range ev {
				if !e.Done() {
					last = str(t, e.JSON(t), "text")
				}
			}
			return last
		}}
	apiMessages = api{name: "messages", path: "/v1/messages",
		body: func(p string, n int, s bool) map[string]any {
			return withStream(map[string]any{"model": model, "max_tokens": n, "messages": []any{map[string]any{"role": "user", "content": p}}}, s)
		},
		simPrompt: userPrompt,
		text:      func(t testing.TB, b map[string]any) string { return str(t, b, "content", 0, "text") },
		streamText: func(t testing.TB, ev []fleet.Event) string {
			return joinEvents(t, ev, func(e fleet.Event, _ map[string]any) bool { return e.Name == "content_block_delta" }, "delta", "text")
		}}
	apiResponses = api{name: "responses", path: "/v1/responses",
		body: func(p string, n int, s bool) map[string]any {
			return withStream(map[string]any{"model": model, "input": p, "max_output_tokens": n}, s)
		},
		simPrompt: userPrompt,
		text:      func(t testing.TB, b map[string]any) string { return str(t, b, "output", 0, "content", 0, "text") },
		streamText: func(t testing.TB, ev []fleet.Event) string {
			return joinEvents(t, ev, func(e fleet.Event, _ map[string]any) bool { return e.Name == "response.output_text.delta" }, "delta")
		}}
)

// generationAPIs are the routes that generate text through a KV handoff.
var generationAPIs = []api{apiChat, apiCompletions, apiGenerate, apiMessages, apiResponses}

// vllmAPIs are the routes issue #5 names for vLLM fleets.
var vllmAPIs = []api{apiChat, apiCompletions, apiResponses}

// mustJSON marshals v.
func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// errorBody is the seed's error shape (smg-spec.md §6.1).
type errorBody struct {
	Error struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
}

func decodeError(t testing.TB, r *fleet.Response) errorBody {
	t.Helper()
	var e errorBody
	require.NoError(t, json.Unmarshal(r.Body, &e), "error body: %s", r.Body)
	return e
}
