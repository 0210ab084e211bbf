package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #4, Done when: 500 concurrent requests: all rooms distinct (duplicate_rooms 0), none
// lost. Not parallel with the other tests: 500 requests × four loopback hops under -race
// already load two cores; sharing them with other fleets only adds dial and probe timeouts.
func TestSGLang500ConcurrentRequestsGetDistinctRooms(t *testing.T) {
	f := sglangFleet(t, 2, 2)
	const n = 500
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	statuses := make([]int, n)
	texts := make([]string, n)
	bodies := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			prompt := fmt.Sprintf("request number %d of the concurrent batch", i)
			body, _ := json.Marshal(apiGenerate.body(prompt, 2, false))
			r, err := f.Gateway.Send(ctx, "/generate", body, nil)
			if err != nil {
				errs[i] = err
				return
			}
			statuses[i] = r.Status
			bodies[i] = string(r.Body)
			var v struct {
				Text string `json:"text"`
			}
			if json.Unmarshal(r.Body, &v) == nil {
				texts[i] = v.Text
			}
		})
	}
	wg.Wait()
	for i := range n {
		require.NoError(t, errs[i], "request %d", i)
		require.Equal(t, http.StatusOK, statuses[i], "request %d: %s", i, bodies[i])
		assert.Equal(t, sim.HandoffText(fmt.Sprintf("request number %d of the concurrent batch", i), 2), texts[i], "request %d", i)
	}
	waitIdle(t, f.Sims()...)
	d, p := fleet.SumStats(f.Decodes...), fleet.SumStats(f.Prefills...)
	assert.Equal(t, int64(n), d.HandoffsReceived, "none lost")
	assert.Equal(t, int64(n), p.HandoffsSent)
	assert.Zero(t, p.DuplicateRooms+d.DuplicateRooms, "duplicate_rooms")
	assert.Zero(t, p.UnmatchedRooms+d.UnmatchedRooms, "unmatched_rooms")
	assert.Zero(t, d.RecomputedPrompts)
	// An engine error a retry absorbed (a refused bootstrap connection on a loaded machine)
	// loses nothing: it is logged, not failed.
	if p.Errors+d.Errors > 0 {
		t.Logf("engine errors absorbed by retries: prefill %+v decode %+v", p, d)
	}
}

// Issue #4, Done when: a client body with bootstrap_room: 1 twice in parallel does not
// collide. The first request's decode waits 2 s before claiming its room, so its prefill leg
// holds its room on the one prefill while the second request arrives: had the client's room
// (or host and port) survived, the second registration would be a duplicate and the decode
// would dial the client's bootstrap address.
func TestSGLangClientBootstrapFieldsAreOverwritten(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	const prompt = "clients must not choose rooms"
	body := func(slow bool) []byte {
		b := apiChat.body(prompt, 3, false)
		b["bootstrap_room"] = 1
		b["bootstrap_host"] = "192.0.2.1"
		b["bootstrap_port"] = 1
		if slow {
			b["sim_fault"] = "decode:slow-first-byte:2000"
		}
		return mustJSON(t, b)
	}
	var wg sync.WaitGroup
	res := make([]*fleet.Response, 2)
	errs := make([]error, 2)
	wg.Go(func() { res[0], errs[0] = f.Gateway.Send(context.Background(), apiChat.path, body(true), nil) })
	require.Eventually(t, func() bool { return f.Prefills[0].Stats().Running == 1 }, 5*time.Second, time.Millisecond,
		"the first prefill leg holds its room")
	res[1], errs[1] = f.Gateway.Send(context.Background(), apiChat.path, body(false), nil)
	wg.Wait()
	for i, r := range res {
		require.NoError(t, errs[i])
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		assert.Equal(t, sim.HandoffText(userPrompt(prompt), 3), apiChat.text(t, r.Object(t)))
	}
	waitIdle(t, f.Sims()...)
	p, d := f.Prefills[0].Stats(), f.Decodes[0].Stats()
	assert.Zero(t, p.DuplicateRooms, "duplicate_rooms")
	assert.Equal(t, int64(2), p.MaxRunningSeen, "both prefill legs were in flight together")
	assert.Equal(t, int64(2), d.HandoffsReceived)
	assert.Zero(t, p.Errors+d.Errors)
}

// Issue #4, Done when: /v1/completions with a 3-item prompt array and /generate with 3
// input_ids lists return 3 results, each from its own handed-off KV.
func TestSGLangBatchesReturnOneResultPerItem(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	prompts := []string{"first prompt of three", "second prompt here", "third and last prompt"}

	r := f.Gateway.Post(t, "/v1/completions", map[string]any{"model": model, "prompt": prompts, "max_tokens": 3}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	choices, ok := r.Object(t)["choices"].([]any)
	require.True(t, ok, "%s", r.Body)
	require.Len(t, choices, 3)
	for i, p := range prompts {
		assert.EqualValues(t, i, path(t, choices[i], "index"))
		assert.Equal(t, sim.HandoffText(p, 3), str(t, choices[i], "text"), "choice %d", i)
	}

	ids := [][]int{{11, 12, 13}, {21, 22}, {31, 32, 33, 34}}
	r = f.Gateway.Post(t, "/generate", map[string]any{"input_ids": ids, "sampling_params": map[string]any{"max_new_tokens": 3}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	results, ok := r.JSON(t).([]any)
	require.True(t, ok, "a batch answers a list: %s", r.Body)
	require.Len(t, results, 3)
	for i := range ids {
		assert.Equal(t, sim.HandoffTextIDs(ids[i], 3), str(t, results[i], "text"), "result %d", i)
	}

	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, int64(2), d.Requests, "one dispatch per batch")
	assert.Equal(t, int64(6), d.HandoffsReceived, "one handoff per batch item")
	assert.Zero(t, d.UnmatchedRooms+f.Prefills[0].Stats().DuplicateRooms)
}

// Issue #4 item 2: batch forms carry equal-length lists of bootstrap fields on both legs,
// with distinct fresh rooms, the prefill's host and its registered port. Recorders stand in
// for the engines so the exact bodies can be read.
func TestSGLangBatchesCarryListsOfThree(t *testing.T) {
	t.Parallel()
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	answer := func(w http.ResponseWriter, r *http.Request, _ []byte) {
		if r.URL.Path == "/generate" {
			fleet.WriteJSON(w, http.StatusOK, `[{"text":"a"},{"text":"b"},{"text":"c"}]`)
			return
		}
		fleet.WriteJSON(w, http.StatusOK, `{"choices":[{"index":0,"text":"a"},{"index":1,"text":"b"},{"index":2,"text":"c"}]}`)
	}
	pre := fleet.NewRecorder(t, "sglang", model, answer)
	dec := fleet.NewRecorder(t, "sglang", model, answer)
	g.Register(t, map[string]any{"url": pre.URL, "worker_type": "prefill", "runtime_type": "sglang", "bootstrap_port": 8998})
	g.Register(t, map[string]any{"url": dec.URL, "worker_type": "decode", "runtime_type": "sglang"})
	g.WaitWorkers(t, 2)

	cases := []struct {
		name, path string
		body       map[string]any
	}{
		{"completions prompt array", "/v1/completions", map[string]any{"model": model, "prompt": []string{"a", "b", "c"},
			"max_tokens": 2, "bootstrap_room": 7, "zz_unknown": map[string]any{"kept": true}}},
		{"generate input_ids lists", "/generate", map[string]any{"input_ids": [][]int{{1}, {2, 3}, {4}},
			"sampling_params": map[string]any{"max_new_tokens": 2}, "zz_unknown": map[string]any{"kept": true}}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := g.Post(t, tc.path, tc.body, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			// The recorders answer without a handoff, so the decode's answer can reach the
			// client before the prefill leg reached its recorder: wait for it.
			require.Eventually(t, func() bool { return len(pre.Requests()) == i+1 }, 5*time.Second, 5*time.Millisecond)
			legs := [][]fleet.Recorded{pre.Requests(), dec.Requests()}
			var rooms [2][]uint64
			for k, reqs := range legs {
				require.Len(t, reqs, i+1)
				got := reqs[i]
				assert.Equal(t, tc.path, got.Path)
				var b struct {
					Host      []string        `json:"bootstrap_host"`
					Port      []int           `json:"bootstrap_port"`
					Room      []uint64        `json:"bootstrap_room"`
					ZZUnknown json.RawMessage `json:"zz_unknown"`
				}
				require.NoError(t, json.Unmarshal(got.Body, &b), "leg body: %s", got.Body)
				assert.Equal(t, []string{"127.0.0.1", "127.0.0.1", "127.0.0.1"}, b.Host)
				assert.Equal(t, []int{8998, 8998, 8998}, b.Port)
				require.Len(t, b.Room, 3)
				assert.NotEqual(t, b.Room[0], b.Room[1])
				assert.NotEqual(t, b.Room[1], b.Room[2])
				assert.NotEqual(t, b.Room[0], b.Room[2])
				for _, room := range b.Room {
					assert.LessOrEqual(t, room, uint64(1<<63-1))
				}
				assert.JSONEq(t, `{"kept":true}`, string(b.ZZUnknown), "unknown fields survive")
				assert.True(t, strings.Index(string(got.Body), `"zz_unknown"`) > strings.Index(string(got.Body), `"model"`) ||
					!strings.Contains(string(got.Body), `"model"`), "key order kept")
				rooms[k] = b.Room
			}
			assert.Equal(t, rooms[0], rooms[1], "both legs meet in the same rooms")
		})
	}
}

// Issue #4, Done when: chat with n: 3 returns 3 choices from 3 rooms (three single-sample
// dispatches), streaming and not.
func TestSGLangChatNThreeFansOutToThreeRooms(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 2, 2)
	const prompt = "three samples please"
	want := sim.HandoffText(userPrompt(prompt), 4)
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprintf("stream=%t", stream), func(t *testing.T) {
			f.Reset()
			body := apiChat.body(prompt, 4, stream)
			body["n"] = 3
			if !stream {
				r := f.Gateway.Post(t, apiChat.path, body, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				choices, ok := r.Object(t)["choices"].([]any)
				require.True(t, ok, "%s", r.Body)
				require.Len(t, choices, 3)
				for i, c := range choices {
					assert.EqualValues(t, i, path(t, c, "index"), "index order")
					assert.Equal(t, want, str(t, c, "message", "content"))
				}
			} else {
				r := f.Gateway.Stream(t, apiChat.path, body)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				assert.Empty(t, r.Errors(), "%s", r.Body)
				require.NotEmpty(t, r.Events)
				assert.True(t, r.Events[len(r.Events)-1].Done(), "ends with [DONE]")
				dones := 0
				texts := map[int]string{}
				for _, e := range r.Events {
					if e.Done() {
						dones++
						continue
					}
					for _, c := range pathOK(e.JSON(t), "choices").([]any) {
						idx := int(path(t, c, "index").(float64))
						if s, ok := pathOK(c, "delta", "content").(string); ok {
							texts[idx] += s
						}
					}
				}
				assert.Equal(t, 1, dones, "one [DONE]")
				assert.Equal(t, map[int]string{0: want, 1: want, 2: want}, texts)
			}
			waitIdle(t, f.Sims()...)
			d, p := fleet.SumStats(f.Decodes...), fleet.SumStats(f.Prefills...)
			assert.Equal(t, int64(3), d.Requests, "three decode dispatches")
			assert.Equal(t, int64(3), p.Requests, "three prefill dispatches")
			assert.Equal(t, int64(3), d.HandoffsReceived, "three rooms")
			assert.Zero(t, d.UnmatchedRooms+p.UnmatchedRooms+p.DuplicateRooms)
		})
	}
}

// Issue #4 item 6 on the other sampling routes: /v1/completions n:3 and /generate
// sampling_params.n:3 also fan out into three single-sample dispatches.
func TestSGLangCompletionsAndGenerateNThree(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	const prompt = "sample me thrice"
	want := sim.HandoffText(prompt, 3)

	r := f.Gateway.Post(t, "/v1/completions", map[string]any{"model": model, "prompt": prompt, "max_tokens": 3, "n": 3}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	choices, ok := r.Object(t)["choices"].([]any)
	require.True(t, ok, "%s", r.Body)
	require.Len(t, choices, 3)
	for i, c := range choices {
		assert.EqualValues(t, i, path(t, c, "index"))
		assert.Equal(t, want, str(t, c, "text"))
	}

	r = f.Gateway.Post(t, "/generate", map[string]any{"text": prompt, "sampling_params": map[string]any{"max_new_tokens": 3, "n": 3}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	results, ok := r.JSON(t).([]any)
	require.True(t, ok, "n>1 on /generate answers a list: %s", r.Body)
	require.Len(t, results, 3)
	for i := range results {
		assert.Equal(t, want, str(t, results[i], "text"), "sample %d", i)
	}
	waitIdle(t, f.Sims()...)
	d := f.Decodes[0].Stats()
	assert.Equal(t, int64(6), d.Requests, "six single-sample dispatches")
	assert.Equal(t, int64(6), d.HandoffsReceived)
	assert.Zero(t, d.UnmatchedRooms+f.Prefills[0].Stats().DuplicateRooms)
}
