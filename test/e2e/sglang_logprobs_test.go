package e2e_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #4, Done when: logprobs requested → merged input_token_logprobs = prefill's
// followed by decode's. Recorders answer with different logprobs per leg so the order is
// visible; the answer is JSON even though the engine said text/plain (seed "Non-streaming
// HTTP responses keep a JSON content type").
func TestSGLangLogprobsPrefillThenDecode(t *testing.T) {
	t.Parallel()
	const (
		prefillLP = `[[null,101,null],[-0.5,102,null]]`
		decodeLP  = `[[null,201,null],[-0.25,202,null]]`
		merged    = `[[null,101,null],[-0.5,102,null],[null,201,null],[-0.25,202,null]]`
	)
	pre := fleet.NewRecorder(t, "sglang", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		fleet.WriteJSON(w, http.StatusOK, `{"text":"x","meta_info":{"id":"p","input_token_logprobs":`+prefillLP+`}}`)
	})
	dec := fleet.NewRecorder(t, "sglang", model, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		var b struct {
			Stream bool `json:"stream"`
		}
		_ = json.Unmarshal(body, &b)
		if !b.Stream {
			w.Header().Set("Content-Type", "text/plain")
			w.WriteHeader(http.StatusOK)
			_, _ = fmt.Fprintf(w, `{"text":"yz","meta_info":{"id":"d","input_token_logprobs":%s,"output_token_logprobs":[[-1,7,null]]}}`, decodeLP)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, text := range []string{"y", "yz"} {
			_, _ = fmt.Fprintf(w, "data: {\"text\":%q,\"meta_info\":{\"id\":\"d\",\"input_token_logprobs\":%s}}\n\n", text, decodeLP)
			w.(http.Flusher).Flush()
		}
		_, _ = fmt.Fprint(w, "data: [DONE]\n\n")
	})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, map[string]any{"url": pre.URL, "worker_type": "prefill", "runtime_type": "sglang", "bootstrap_port": 8998})
	g.Register(t, map[string]any{"url": dec.URL, "worker_type": "decode", "runtime_type": "sglang"})
	g.WaitWorkers(t, 2)

	body := map[string]any{"text": "a b", "return_logprob": true, "sampling_params": map[string]any{"max_new_tokens": 2}}
	r := g.Post(t, "/generate", body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.JSONEq(t, `{"text":"yz","meta_info":{"id":"d","input_token_logprobs":`+merged+`,"output_token_logprobs":[[-1,7,null]]}}`, string(r.Body))

	body["stream"] = true
	s := g.Stream(t, "/generate", body)
	require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
	require.Len(t, s.Events, 3, "%s", s.Body)
	for i, text := range []string{"y", "yz"} {
		assert.JSONEq(t, `{"text":"`+text+`","meta_info":{"id":"d","input_token_logprobs":`+merged+`}}`, s.Events[i].Data, "event %d", i)
	}
	assert.True(t, s.Events[2].Done())
}

// The same merge against the simulators: both engines report the prompt's logprobs, so the
// merged list is the prompt's twice, each half starting with the null first-token logprob.
func TestSGLangLogprobsMergedWithSimulators(t *testing.T) {
	t.Parallel()
	f := sglangFleet(t, 1, 1)
	const prompt = "log my prompt probabilities"
	n := sim.PromptTokens(prompt)
	check := func(t *testing.T, lp []any) {
		t.Helper()
		require.Len(t, lp, 2*n, "prefill's then decode's")
		assert.Equal(t, lp[:n], lp[n:])
		assert.Nil(t, path(t, lp[0], 0), "prefill's first prompt token has no logprob")
		assert.Nil(t, path(t, lp[n], 0), "decode's first prompt token has no logprob")
	}
	for _, stream := range []bool{false, true} {
		t.Run(streamName(stream), func(t *testing.T) {
			body := apiGenerate.body(prompt, 3, stream)
			body["return_logprob"] = true
			if !stream {
				r := f.Gateway.Post(t, "/generate", body, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				o := r.Object(t)
				assert.Equal(t, sim.HandoffText(prompt, 3), str(t, o, "text"))
				check(t, path(t, o, "meta_info", "input_token_logprobs").([]any))
				assert.Len(t, path(t, o, "meta_info", "output_token_logprobs"), 3, "output logprobs untouched")
				return
			}
			s := f.Gateway.Stream(t, "/generate", body)
			require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
			assert.Empty(t, s.Errors())
			data := s.Data(t)
			require.NotEmpty(t, data)
			for _, ev := range data {
				check(t, path(t, ev, "meta_info", "input_token_logprobs").([]any))
			}
			assert.Equal(t, sim.HandoffText(prompt, 3), apiGenerate.streamText(t, s.Events))
		})
	}
	require.Eventually(t, func() bool { return f.Prefills[0].Stats().Running == 0 }, 5*time.Second, 5*time.Millisecond)
	assert.Equal(t, int64(2), f.Decodes[0].Stats().HandoffsReceived)
}
