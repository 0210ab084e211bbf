package e2e_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Issue #5, Done when: prefill answers 400 with a vLLM error body → the client gets that 400
// with code prefill_upstream_error and the engine's message; the decode sim sees nothing; no
// retry happens.
func TestVLLMPrefill400PassesThroughWithoutRetry(t *testing.T) {
	t.Parallel()
	f := vllmFleet(t, sim.ConnectorNixl, 1, 1)
	for i, stream := range []bool{false, true} {
		body := apiChat.body("a bad request", 3, stream)
		body["sim_fault"] = "prefill:status:400"
		r := f.Gateway.Post(t, apiChat.path, body, nil)
		require.Equal(t, http.StatusBadRequest, r.Status, "%s", r.Body)
		assert.Equal(t, wire.CodePrefillUpstreamError, r.Header.Get(wire.HeaderErrorCode))
		assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
		assert.JSONEq(t, `{"error":{"type":"invalid_request_error","code":"prefill_upstream_error",
			"message":"sim fault: injected status 400","param":null}}`, string(r.Body))
		assert.Equal(t, int64(i+1), f.Prefills[0].Stats().Requests, "no retry")
		assert.Equal(t, int64(i+1), f.Prefills[0].Stats().Errors)
		assert.Zero(t, f.Decodes[0].Stats().Requests, "the decode worker is never contacted")
	}
	// 4xx is a client fault: the prefill worker stays healthy and routable.
	r := f.Gateway.Post(t, apiChat.path, apiChat.body("a good request", 3, false), nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
}

// Issue #5, Done when: a prefill that returns no kv_transfer_params → the request still
// succeeds (decode recomputes) and smg_pd_kv_transfer_failures_total grows by one.
func TestVLLMMissingKVParamsIsCountedOnce(t *testing.T) {
	t.Parallel()
	f := vllmFleet(t, sim.ConnectorNixl, 1, 1)
	before := f.Gateway.Metrics(t).Sum("smg_pd_kv_transfer_failures_total")
	body := apiCompletions.body("the prefill forgets its params", 3, false)
	body["sim_fault"] = "prefill:no-kv-params"
	r := f.Gateway.Post(t, apiCompletions.path, body, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Equal(t, sim.RecomputeText("the prefill forgets its params", 3), apiCompletions.text(t, r.Object(t)))
	waitIdle(t, f.Sims()...)
	assert.Equal(t, before+1, f.Gateway.Metrics(t).Sum("smg_pd_kv_transfer_failures_total"))
	d := f.Decodes[0].Stats()
	assert.Equal(t, int64(1), d.RecomputedPrompts)
	assert.Zero(t, d.HandoffsReceived)
	assert.Equal(t, int64(1), f.Prefills[0].Stats().Requests, "no retry")
}

// legBody is the part of a vLLM leg body these tests read.
type legBody struct {
	KV                  json.RawMessage `json:"kv_transfer_params"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              *bool           `json:"stream"`
	N                   *int            `json:"n"`
	MinTokens           *int            `json:"min_tokens"`
	StreamOptions       json.RawMessage `json:"stream_options"`
}

var transferID = regexp.MustCompile(`^xfer-[0-9a-f-]{36}$`)

// Issue #5, Done when: the Mooncake decode body equals the minted five-key object exactly,
// with port 8998 when the prefill registered none. Recorders stand in for both engines so
// the exact bytes of each leg can be compared; the prefill leg is the one-token,
// non-streaming, sanitised body with the three-key tag (issue #5 item 2).
func TestVLLMMooncakeMintsTheDecodeParamsExactly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		register map[string]any
		addr     string
	}{
		{"no bootstrap port registered", map[string]any{"kv_engine_id": "eng-1"}, "http://127.0.0.1:8998"},
		{"registered bootstrap port", map[string]any{"kv_engine_id": "eng-2", "bootstrap_port": 9123}, "http://127.0.0.1:9123"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pre := fleet.NewRecorder(t, "vllm", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				fleet.WriteJSON(w, http.StatusOK, `{"id":"p","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"x"}}],"kv_transfer_params":null}`)
			})
			dec := fleet.NewRecorder(t, "vllm", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
				fleet.WriteJSON(w, http.StatusOK, `{"id":"d","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"decoded"}}]}`)
			})
			g := fleet.StartGateway(t, fleet.DefaultConfig())
			reg := map[string]any{"url": pre.URL, "worker_type": "prefill", "runtime_type": "vllm", "kv_connector": "MooncakeConnector"}
			for k, v := range tc.register {
				reg[k] = v
			}
			g.Register(t, reg)
			g.Register(t, map[string]any{"url": dec.URL, "worker_type": "decode", "runtime_type": "vllm", "kv_connector": "MooncakeConnector"})
			g.WaitWorkers(t, 2)

			client := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "hi"}},
				"max_completion_tokens": 5, "stream": false, "min_tokens": 2, "kv_transfer_params": map[string]any{"client": "owned"}}
			r := g.Post(t, apiChat.path, client, http.Header{"X-Request-Id": {"client-rid-1"}})
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			assert.JSONEq(t, `{"id":"d","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"decoded"}}]}`, string(r.Body))

			pr, dr := pre.Requests(), dec.Requests()
			require.Len(t, pr, 1)
			require.Len(t, dr, 1)
			var pb, db legBody
			require.NoError(t, json.Unmarshal(pr[0].Body, &pb))
			require.NoError(t, json.Unmarshal(dr[0].Body, &db))
			var tag struct {
				TransferID string `json:"transfer_id"`
			}
			require.NoError(t, json.Unmarshal(pb.KV, &tag))
			require.Regexp(t, transferID, tag.TransferID)
			assert.Equal(t, `{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"`+tag.TransferID+`"}`, string(pb.KV),
				"prefill tag, exact bytes")
			assert.Equal(t, `{"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"`+tag.TransferID+
				`","remote_engine_id":"`+tc.register["kv_engine_id"].(string)+`","remote_bootstrap_addr":"`+tc.addr+`"}`,
				string(db.KV), "decode params: the minted five-key object, exact bytes")

			// The prefill leg: one token through max_completion_tokens, not streamed, no
			// min_tokens; the decode leg keeps the client's values.
			require.NotNil(t, pb.MaxCompletionTokens)
			assert.Equal(t, 1, *pb.MaxCompletionTokens)
			assert.Nil(t, pb.MaxTokens)
			assert.Equal(t, false, *pb.Stream)
			assert.Nil(t, pb.MinTokens)
			assert.Equal(t, 5, *db.MaxCompletionTokens)
			assert.Equal(t, 2, *db.MinTokens)
			assert.Equal(t, "client-rid-1", pr[0].Header.Get("X-Request-Id"), "X-Request-Id kept on the prefill leg")
			assert.Equal(t, "client-rid-1", dr[0].Header.Get("X-Request-Id"), "and on the decode leg")
		})
	}
}

// Issue #5 item 3: NIXL forwards what the prefill returned verbatim and opaque (string block
// ids, nested lists, extra keys), and mints one X-Request-Id for both legs when the client
// sent none.
func TestVLLMNixlRelaysTheParamsVerbatim(t *testing.T) {
	t.Parallel()
	const params = `{"do_remote_prefill":true,"do_remote_decode":false,"remote_block_ids":[["7","8"],[9]],` +
		`"remote_engine_id":"e-9","remote_host":"10.1.2.3","remote_port":5600,"tp_size":1,"x_extra":{"k":[1,"two",null]}}`
	pre := fleet.NewRecorder(t, "vllm", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		fleet.WriteJSON(w, http.StatusOK, `{"id":"p","choices":[{"index":0,"text":"x"}],"kv_transfer_params":`+params+`}`)
	})
	dec := fleet.NewRecorder(t, "vllm", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		fleet.WriteJSON(w, http.StatusOK, `{"id":"d","choices":[{"index":0,"text":"ok"}]}`)
	})
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, map[string]any{"url": pre.URL, "worker_type": "prefill", "runtime_type": "vllm", "kv_connector": "NixlConnector"})
	g.Register(t, map[string]any{"url": dec.URL, "worker_type": "decode", "runtime_type": "vllm", "kv_connector": "NixlConnector"})
	g.WaitWorkers(t, 2)

	r := g.Post(t, apiCompletions.path, map[string]any{"model": model, "prompt": "p", "max_tokens": 4, "stream": true,
		"stream_options": map[string]any{"include_usage": true}, "n": 1}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	pr, dr := pre.Requests(), dec.Requests()
	require.Len(t, pr, 1)
	require.Len(t, dr, 1)
	var pb, db legBody
	require.NoError(t, json.Unmarshal(pr[0].Body, &pb))
	require.NoError(t, json.Unmarshal(dr[0].Body, &db))
	assert.Equal(t, `{"do_remote_decode":true,"do_remote_prefill":false}`, string(pb.KV), "NIXL prefill tag, exact bytes")
	assert.Equal(t, params, string(db.KV), "relayed byte for byte")
	assert.Equal(t, 1, *pb.MaxTokens)
	assert.Equal(t, false, *pb.Stream)
	assert.Nil(t, pb.StreamOptions, "stream_options removed on the prefill leg")
	assert.Equal(t, 1, *pb.N)
	assert.Equal(t, true, *db.Stream)
	assert.Equal(t, 4, *db.MaxTokens)
	rid := pr[0].Header.Get("X-Request-Id")
	assert.NotEmpty(t, rid, "minted X-Request-Id")
	assert.Equal(t, rid, dr[0].Header.Get("X-Request-Id"), "the same id on both legs")
}

// Issue #5 items 4 and 5: a Mooncake prefill registered without kv_engine_id cannot mint
// params, so decode recomputes (mode still counted); a prefill transport error is a 502
// prefill_request_failed and the decode worker is never contacted; a MoRIIOConnector pair is
// refused with 501 before either leg.
func TestVLLMFallbacksAndRefusals(t *testing.T) {
	t.Parallel()
	t.Run("mooncake without engine id recomputes", func(t *testing.T) {
		t.Parallel()
		pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, KVConnector: sim.ConnectorMooncake})
		dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, KVConnector: sim.ConnectorMooncake})
		g := fleet.StartGateway(t, fleet.DefaultConfig())
		g.Register(t, map[string]any{"url": pre.URL(), "worker_type": "prefill", "kv_connector": "MooncakeConnector",
			"bootstrap_port": pre.BootstrapPort()})
		g.Register(t, fleet.WorkerSpec(dec))
		g.WaitWorkers(t, 2)
		r := g.Post(t, apiChat.path, apiChat.body("no engine id", 3, false), nil)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		assert.Equal(t, sim.RecomputeText(userPrompt("no engine id"), 3), apiChat.text(t, r.Object(t)))
		waitIdle(t, pre, dec)
		assert.Equal(t, int64(1), dec.Stats().RecomputedPrompts)
		assert.Zero(t, pre.Stats().Requests, "no wasted one-token prefill leg: nothing could be handed off")
		assert.Equal(t, 1.0, g.Metrics(t).Sum("smg_pd_kv_connector_mode_total", "mode", "mooncake"))
	})
	t.Run("prefill transport error is 502", func(t *testing.T) {
		t.Parallel()
		f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Prefills: 1, Decodes: 1, Gateway: noRetries})
		body := apiChat.body("the prefill resets", 3, false)
		body["sim_fault"] = "prefill:reset"
		r := f.Gateway.Post(t, apiChat.path, body, nil)
		require.Equal(t, http.StatusBadGateway, r.Status, "%s", r.Body)
		assert.Equal(t, "prefill_request_failed", r.Header.Get(wire.HeaderErrorCode))
		assert.Equal(t, "prefill_request_failed", decodeError(t, r).Error.Code)
		assert.Zero(t, f.Decodes[0].Stats().Requests, "decode never contacted")
	})
}

// Issue #5 item 5: a decode that dies mid-stream after the handoff ends the relayed stream
// with an error event and [DONE], as on the SGLang path.
func TestVLLMDecodeDiesMidStream(t *testing.T) {
	t.Parallel()
	f := vllmFleet(t, sim.ConnectorNixl, 1, 1)
	body := apiChat.body("the vllm decode dies", 6, true)
	body["sim_fault"] = "decode:die-after:2"
	s := f.Gateway.Stream(t, apiChat.path, body)
	require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
	n := len(s.Events)
	require.GreaterOrEqual(t, n, 3, "%s", s.Body)
	assert.True(t, s.Events[n-1].Done())
	require.True(t, s.Events[n-2].IsError(), "%s", s.Body)
	assert.Len(t, s.Errors(), 1)
	assert.Equal(t, int64(1), f.Decodes[0].Stats().HandoffsReceived, "the handoff itself succeeded")
}
