package sim_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

func TestSGLangMatchedHandoff(t *testing.T) {
	t.Parallel()
	chat := sim.ChatPrompt(sim.Message{Role: "system", Content: "be brief"}, sim.Message{Role: "user", Content: "hello there"})
	cases := []struct {
		name   string
		path   string
		room   any
		fields map[string]any
		// check asserts the decode and prefill bodies.
		check func(t *testing.T, d, p []byte)
		items int
	}{
		{
			name: "generate text scalar", path: "/generate", room: uint64(1<<63 - 1), items: 1,
			fields: map[string]any{"text": "the quick brown fox", "sampling_params": map[string]any{"max_new_tokens": 5}},
			check: func(t *testing.T, d, p []byte) {
				var dm, pm map[string]any
				require.NoError(t, json.Unmarshal(d, &dm))
				require.NoError(t, json.Unmarshal(p, &pm))
				assert.Equal(t, sim.HandoffText("the quick brown fox", 5), dm["text"])
				assert.NotEqual(t, sim.RecomputeText("the quick brown fox", 5), dm["text"])
				dmeta := dm["meta_info"].(map[string]any)
				assert.Equal(t, map[string]any{"type": "length", "length": float64(5)}, dmeta["finish_reason"])
				assert.EqualValues(t, 4, dmeta["prompt_tokens"])
				assert.EqualValues(t, 4, dmeta["cached_tokens"])
				assert.EqualValues(t, 5, dmeta["completion_tokens"])
				assert.Len(t, dm["output_ids"], 5)
				// The prefill answers with the one first token, finish length 0.
				assert.Equal(t, sim.HandoffText("the quick brown fox", 1), pm["text"])
				pmeta := pm["meta_info"].(map[string]any)
				assert.Equal(t, map[string]any{"type": "length", "length": float64(0)}, pmeta["finish_reason"])
				assert.EqualValues(t, 1, pmeta["completion_tokens"])
				assert.Equal(t, dm["output_ids"].([]any)[0], pm["output_ids"].([]any)[0], "decode's first token comes from the prefill")
			},
		},
		{
			name: "generate text batch", path: "/generate", room: []uint64{11, 12}, items: 2,
			fields: map[string]any{"text": []string{"alpha beta", "gamma"}, "sampling_params": map[string]any{"max_new_tokens": 3}},
			check: func(t *testing.T, d, p []byte) {
				var dl, pl []map[string]any
				require.NoError(t, json.Unmarshal(d, &dl))
				require.NoError(t, json.Unmarshal(p, &pl))
				require.Len(t, dl, 2)
				require.Len(t, pl, 2)
				assert.Equal(t, sim.HandoffText("alpha beta", 3), dl[0]["text"])
				assert.Equal(t, sim.HandoffText("gamma", 3), dl[1]["text"])
				assert.Equal(t, sim.HandoffText("gamma", 1), pl[1]["text"])
			},
		},
		{
			name: "generate input_ids batch with scalar room expanded", path: "/generate", room: uint64(500), items: 2,
			fields: map[string]any{"input_ids": [][]int{{1, 2, 3}, {4, 5}}, "sampling_params": map[string]any{"max_new_tokens": 2},
				"bootstrap_host": []string{"127.0.0.1", "127.0.0.1"}},
			check: func(t *testing.T, d, _ []byte) {
				var dl []map[string]any
				require.NoError(t, json.Unmarshal(d, &dl))
				require.Len(t, dl, 2)
				assert.Equal(t, sim.HandoffTextIDs([]int{1, 2, 3}, 2), dl[0]["text"])
				assert.Equal(t, sim.HandoffTextIDs([]int{4, 5}, 2), dl[1]["text"])
			},
		},
		{
			name: "completions prompt array", path: "/v1/completions", room: []uint64{21, 22}, items: 2,
			fields: map[string]any{"model": "sim-model", "prompt": []string{"one two", "three four five"}, "max_tokens": 4},
			check: func(t *testing.T, d, p []byte) {
				var dm, pm struct {
					Choices []struct {
						Index        int    `json:"index"`
						Text         string `json:"text"`
						FinishReason string `json:"finish_reason"`
					} `json:"choices"`
					Usage struct {
						PromptTokens        int `json:"prompt_tokens"`
						CompletionTokens    int `json:"completion_tokens"`
						PromptTokensDetails struct {
							CachedTokens int `json:"cached_tokens"`
						} `json:"prompt_tokens_details"`
					} `json:"usage"`
				}
				require.NoError(t, json.Unmarshal(d, &dm))
				require.NoError(t, json.Unmarshal(p, &pm))
				require.Len(t, dm.Choices, 2)
				assert.Equal(t, sim.HandoffText("one two", 4), dm.Choices[0].Text)
				assert.Equal(t, sim.HandoffText("three four five", 4), dm.Choices[1].Text)
				assert.Equal(t, "length", pm.Choices[0].FinishReason)
				assert.Equal(t, 5, dm.Usage.PromptTokens)
				assert.Equal(t, 5, dm.Usage.PromptTokensDetails.CachedTokens)
				assert.Equal(t, 8, dm.Usage.CompletionTokens)
				assert.Equal(t, 2, pm.Usage.CompletionTokens)
			},
		},
		{
			name: "chat n=2 with a room list", path: "/v1/chat/completions", room: []uint64{31, 32}, items: 2,
			fields: map[string]any{"n": 2, "max_tokens": 2, "messages": []map[string]any{{"role": "user", "content": "hello there"}}},
			check: func(t *testing.T, d, _ []byte) {
				var dm struct {
					Choices []struct {
						Index   int                      `json:"index"`
						Message struct{ Content string } `json:"message"`
					} `json:"choices"`
				}
				require.NoError(t, json.Unmarshal(d, &dm))
				require.Len(t, dm.Choices, 2)
				want := sim.HandoffText(sim.ChatPrompt(sim.Message{Role: "user", Content: "hello there"}), 2)
				assert.Equal(t, want, dm.Choices[1].Message.Content)
				assert.Equal(t, 1, dm.Choices[1].Index)
			},
		},
		{
			name: "chat scalar room", path: "/v1/chat/completions", room: uint64(0), items: 1,
			fields: map[string]any{"model": "sim-model", "max_tokens": 3, "messages": []map[string]any{
				{"role": "system", "content": "be brief"},
				{"role": "user", "content": []map[string]string{{"type": "text", "text": "hello there"}}}}},
			check: func(t *testing.T, d, p []byte) {
				var dm, pm struct {
					Choices []struct {
						Message      struct{ Content string } `json:"message"`
						FinishReason string                   `json:"finish_reason"`
					} `json:"choices"`
				}
				require.NoError(t, json.Unmarshal(d, &dm))
				require.NoError(t, json.Unmarshal(p, &pm))
				assert.Equal(t, sim.HandoffText(chat, 3), dm.Choices[0].Message.Content)
				assert.Equal(t, sim.HandoffText(chat, 1), pm.Choices[0].Message.Content)
				assert.Equal(t, "length", pm.Choices[0].FinishReason)
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, d := pair(t, sim.EngineSGLang)
			body := sglangBody(p, tc.room, tc.fields)
			pr, dr := both(p.URL()+tc.path, body, d.URL()+tc.path, body)
			require.NoError(t, pr.err)
			require.NoError(t, dr.err)
			require.Equal(t, http.StatusOK, pr.status, "prefill: %s", pr.body)
			require.Equal(t, http.StatusOK, dr.status, "decode: %s", dr.body)
			tc.check(t, dr.body, pr.body)
			assert.EqualValues(t, tc.items, d.Stats().HandoffsReceived)
			assert.EqualValues(t, tc.items, p.Stats().HandoffsSent)
			assert.Zero(t, d.Stats().UnmatchedRooms+p.Stats().UnmatchedRooms)
			assert.Zero(t, d.Stats().RecomputedPrompts)
			eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "handoff state released")
		})
	}
}

func TestSGLangHandoffFailures(t *testing.T) {
	t.Parallel()
	gen := map[string]any{"text": "some prompt words"}
	cases := []struct {
		name string
		// decodeBody derives the decode's body from the prefill's body.
		decodeBody func(p *sim.Server, pb map[string]any) map[string]any
		decodeMsg  string
		unmatchedD int64
	}{
		{"wrong room", func(p *sim.Server, pb map[string]any) map[string]any {
			return sglangBody(p, uint64(43), gen)
		}, "Request 43 timed out after 0.3s in KVPoll.WaitingForInput", 1},
		{"wrong port (the prefill's HTTP port)", func(p *sim.Server, pb map[string]any) map[string]any {
			b := sglangBody(p, uint64(42), gen)
			b["bootstrap_port"] = p.Port()
			return b
		}, "answered 404", 0},
		{"wrong host", func(p *sim.Server, pb map[string]any) map[string]any {
			b := sglangBody(p, uint64(42), gen)
			b["bootstrap_host"] = "::1"
			return b
		}, "failed to reach bootstrap server [::1]:", 0},
		{"null port means 8998", func(p *sim.Server, pb map[string]any) map[string]any {
			b := sglangBody(p, uint64(42), gen)
			b["bootstrap_port"] = nil
			return b
		}, ":8998", 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, d := pair(t, sim.EngineSGLang, shortTimeout)
			pb := sglangBody(p, uint64(42), gen)
			pr, dr := both(p.URL()+"/generate", pb, d.URL()+"/generate", tc.decodeBody(p, pb))
			require.NoError(t, dr.err)
			assert.Equal(t, http.StatusInternalServerError, dr.status)
			assert.Contains(t, errMessage(t, dr), "KVTransferError(bootstrap_room=")
			assert.Contains(t, errMessage(t, dr), tc.decodeMsg)
			// The unmatched prefill gives up after its handoff timeout, in SGLang's words.
			assert.Equal(t, http.StatusInternalServerError, pr.status)
			assert.Equal(t, `{"detail":"KVTransferError(bootstrap_room=42): Request 42 timed out after 0.3s in KVPoll.Bootstrapping"}`, string(pr.body))
			assert.EqualValues(t, 1, p.Stats().UnmatchedRooms)
			assert.EqualValues(t, tc.unmatchedD, d.Stats().UnmatchedRooms)
			assert.EqualValues(t, 1, d.Stats().Errors)
			assert.Zero(t, d.Stats().HandoffsReceived)
			eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "handoff state released")
		})
	}
}

func TestSGLangBadBootstrapFields(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineSGLang, shortTimeout)
	cases := []struct {
		name string
		body map[string]any
		msg  string
	}{
		{"missing all", map[string]any{"text": "x"}, "requires bootstrap_host and bootstrap_room"},
		{"missing room", map[string]any{"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_port": 1}, "bootstrap_room=None"},
		{"room list too short", map[string]any{"text": []string{"a", "b"}, "bootstrap_host": "127.0.0.1", "bootstrap_room": []int{1}}, "bootstrap_room has 1 entries for a batch of 2"},
		{"negative room", map[string]any{"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_room": -1}, "bootstrap_room must be an integer in [0, 2^63-1]"},
		{"room as string", map[string]any{"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_room": "7"}, "bootstrap_room must be an integer"},
		{"room above 2^63-1", map[string]any{"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_room": uint64(1 << 63)}, "bootstrap_room must be an integer"},
		{"port as string", map[string]any{"text": "x", "bootstrap_host": "127.0.0.1", "bootstrap_port": "8998", "bootstrap_room": 1}, "bootstrap_port must be an integer port or null"},
	}
	for _, tc := range cases {
		for _, s := range []*sim.Server{p, d} {
			r := post(s.URL()+"/generate", tc.body)
			require.NoError(t, r.err)
			assert.Equal(t, http.StatusBadRequest, r.status, tc.name)
			var e struct {
				Error struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			require.NoError(t, json.Unmarshal(r.body, &e), tc.name)
			assert.Contains(t, e.Error.Message, tc.msg, tc.name)
		}
	}
	assert.EqualValues(t, len(cases), d.Stats().Errors)
	assert.EqualValues(t, len(cases), p.Stats().Requests)
}

func TestSGLangDuplicateRooms(t *testing.T) {
	t.Parallel()
	t.Run("second prefill with the same room", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineSGLang)
		body := sglangBody(p, uint64(77), map[string]any{"text": "dup room"})
		first := make(chan result, 1)
		go func() { first <- post(p.URL()+"/generate", body) }()
		eventually(t, func() bool { return p.PendingHandoffs() == 1 }, "room registered")
		dup := post(p.URL()+"/generate", body)
		assert.Equal(t, http.StatusBadRequest, dup.status)
		assert.Contains(t, errMessage(t, dup), "Duplicate bootstrap_room 77")
		dr := post(d.URL()+"/generate", body)
		assert.Equal(t, http.StatusOK, dr.status)
		assert.Equal(t, http.StatusOK, (<-first).status)
		assert.EqualValues(t, 1, p.Stats().DuplicateRooms)
		assert.EqualValues(t, 1, p.Stats().HandoffsSent)
	})
	t.Run("second decode claim, decode before prefill", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineSGLang)
		d2 := start(t, cfgOf(sim.EngineSGLang, sim.RoleDecode))
		body := sglangBody(p, uint64(78), map[string]any{"text": "dup claim"})
		first := make(chan result, 1)
		go func() { first <- post(d.URL()+"/generate", body) }()
		eventually(t, func() bool { return p.PendingHandoffs() == 1 }, "room claimed")
		dup := post(d2.URL()+"/generate", body)
		assert.Equal(t, http.StatusInternalServerError, dup.status)
		assert.Contains(t, errMessage(t, dup), "answered 409: duplicate bootstrap_room 78")
		pr := post(p.URL()+"/generate", body)
		assert.Equal(t, http.StatusOK, pr.status)
		dr := <-first
		assert.Equal(t, http.StatusOK, dr.status)
		assert.Equal(t, sim.HandoffText("dup claim", 128), dr.json(t)["text"])
		assert.EqualValues(t, 1, p.Stats().DuplicateRooms)
	})
}
