package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

// smg-spec.md §11.2 T-HTTP-10 and the seed's route-aware cap field.
func TestPrefillBodyExact(t *testing.T) {
	t.Parallel()
	tag := []byte(`{"do_remote_decode":true,"do_remote_prefill":false}`)
	cases := []struct {
		name  string
		route handoff.Route
		body  string
		tag   []byte
		want  string
	}{
		{"chat with max_completion_tokens caps it and drops max_tokens", handoff.RouteChat,
			`{"max_completion_tokens":99,"max_tokens":88,"n":3,"stream":true,"stream_options":{"include_usage":true},"min_tokens":5}`, tag,
			`{"max_completion_tokens":1,"n":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}`},
		{"chat with max_tokens (T-HTTP-8 body)", handoff.RouteChat,
			`{"model":"m","max_tokens":50,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`, tag,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}`},
		{"chat with null max_completion_tokens uses max_tokens", handoff.RouteChat,
			`{"max_completion_tokens":null}`, nil,
			`{"max_completion_tokens":null,"stream":false,"max_tokens":1}`},
		{"responses caps max_output_tokens", handoff.RouteResponses,
			`{"max_output_tokens":99,"stream":true,"input":"hi"}`, tag,
			`{"max_output_tokens":1,"stream":false,"input":"hi","kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}`},
		{"completions adds max_tokens", handoff.RouteCompletions,
			`{"prompt":"hi"}`, nil,
			`{"prompt":"hi","stream":false,"max_tokens":1}`},
		{"messages caps max_tokens", handoff.RouteMessages,
			`{"model":"m","max_tokens":16,"messages":[]}`, tag,
			`{"model":"m","max_tokens":1,"messages":[],"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}`},
		{"generate caps sampling_params.max_new_tokens", handoff.RouteGenerate,
			`{"text":"hi","sampling_params":{"max_new_tokens":64,"temperature":0},"stream":true}`, nil,
			`{"text":"hi","sampling_params":{"max_new_tokens":1,"temperature":0},"stream":false}`},
		{"client kv_transfer_params replaced by the tag", handoff.RouteCompletions,
			`{"kv_transfer_params":{"remote_host":"evil"},"prompt":"p"}`, tag,
			`{"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false},"prompt":"p","stream":false,"max_tokens":1}`},
		{"client kv_transfer_params removed without a tag", handoff.RouteCompletions,
			`{"kv_transfer_params":{"remote_host":"evil"},"prompt":"p"}`, nil,
			`{"prompt":"p","stream":false,"max_tokens":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := handoff.PrefillBody(mustInspect(t, tc.route, tc.body), tc.tag)
			require.NoError(t, err)
			assert.Equal(t, tc.want, string(got))
		})
	}
	_, err := handoff.PrefillBody(mustInspect(t, handoff.RouteGenerate, `{"sampling_params":"x"}`), nil)
	e, ok := errs.As(err)
	require.True(t, ok)
	assert.Equal(t, 400, e.Status)
}

func TestHarvestParams(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, body, want string
	}{
		{"object relayed byte-for-byte", `{"id":"x","kv_transfer_params":{"remote_engine_id":"eng0","remote_block_ids":[1,2]},"choices":[]}`,
			`{"remote_engine_id":"eng0","remote_block_ids":[1,2]}`},
		{"odd shapes and whitespace survive", `{"kv_transfer_params": { "remote_block_ids" : [["7","8"],[9]], "tp_size":2.0, "extra":{"nested":[null,true]}, "remote_request_id":"\u00e9" } }`,
			`{ "remote_block_ids" : [["7","8"],[9]], "tp_size":2.0, "extra":{"nested":[null,true]}, "remote_request_id":"\u00e9" }`},
		{"absent", `{"choices":[]}`, ``},
		{"null", `{"kv_transfer_params":null}`, ``},
		{"empty object", `{"kv_transfer_params":{}}`, ``},
		{"empty object with whitespace", `{"kv_transfer_params":{ \n }}`, ``},
		{"last duplicate wins", `{"kv_transfer_params":{"a":1},"kv_transfer_params":{}}`, ``},
		{"not an object", `{"kv_transfer_params":"x"}`, ``},
		{"unparsable body", `<html>`, ``},
	}
	for _, tc := range cases {
		got := handoff.HarvestParams([]byte(tc.body))
		assert.Equal(t, tc.want, string(got), tc.name)
		if tc.want == "" {
			assert.Nil(t, got, tc.name)
		}
	}
}

func TestDecodeBody(t *testing.T) {
	t.Parallel()
	req := mustInspect(t, handoff.RouteChat, `{"model":"m","max_tokens":50,"stream":true}`)
	assert.Equal(t, `{"model":"m","max_tokens":50,"stream":true,"kv_transfer_params":{"a":1}}`, string(handoff.DecodeBody(req, []byte(`{"a":1}`))))
	same := handoff.DecodeBody(req, nil)
	assert.Equal(t, `{"model":"m","max_tokens":50,"stream":true}`, string(same))
	assert.Same(t, &req.Body.Bytes()[0], &same[0], "nothing to change: the client's own bytes")
	withClient := mustInspect(t, handoff.RouteChat, `{"kv_transfer_params":{"evil":1},"model":"m"}`)
	assert.Equal(t, `{"model":"m"}`, string(handoff.DecodeBody(withClient, nil)))
}

// T-HTTP-8 / T-HTTP-9 shapes, per connector, end to end through a Plan.
func TestPlanSequential(t *testing.T) {
	t.Parallel()
	nixlResp := []byte(`{"object":"chat.completion","kv_transfer_params":{"remote_engine_id":"eng0","remote_block_ids":[1,2]}}`)
	client := `{"model":"m","max_tokens":50,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`
	mooncake := &handoff.Mooncake{Host: "10.0.0.1", Port: 8998, EngineID: "engine-1", NewUUID: func() string { return "u1" }}
	cases := []struct {
		name        string
		conn        handoff.Connector
		client      string
		prefillResp []byte
		mode        string
		skip        bool
		prefill     string
		decode      string
		outcome     handoff.Outcome
	}{
		{"nixl relays verbatim", handoff.Nixl{}, client, nixlResp, "nixl", false,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}`,
			`{"model":"m","max_tokens":50,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"kv_transfer_params":{"remote_engine_id":"eng0","remote_block_ids":[1,2]}}`,
			handoff.OutcomeRelayed},
		{"nixl prefill without params: failure, decode recomputes", handoff.Nixl{}, client, []byte(`{"object":"chat.completion"}`), "nixl", false,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}`,
			client, handoff.OutcomeKVTransferFailure},
		{"mooncake mints both sides", mooncake, client, []byte(`{}`), "mooncake", false,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"xfer-u1"}}`,
			`{"model":"m","max_tokens":50,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"kv_transfer_params":{"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"xfer-u1","remote_engine_id":"engine-1","remote_bootstrap_addr":"http://10.0.0.1:8998"}}`,
			handoff.OutcomeMinted},
		{"mooncake without engine id: no prefill leg, recompute", &handoff.Mooncake{Host: "h", Port: 8998}, client, nixlResp, "mooncake", true,
			``, client, handoff.OutcomeRecompute},
		{"passthrough relays what prefill returned", handoff.Passthrough{}, client, nixlResp, "passthrough", false,
			`{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}],"stream":false}`,
			`{"model":"m","max_tokens":50,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}],"kv_transfer_params":{"remote_engine_id":"eng0","remote_block_ids":[1,2]}}`,
			handoff.OutcomeRelayed},
		{"n>1 skips the prefill leg (T-HTTP-9)", handoff.Nixl{}, `{"model":"m","n":2,"messages":[]}`, nil, "nixl", true,
			``, `{"model":"m","n":2,"messages":[]}`, handoff.OutcomeSkipPrefill},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			plan, err := handoff.PlanSequential(tc.conn, mustInspect(t, handoff.RouteChat, tc.client))
			require.NoError(t, err)
			assert.Equal(t, tc.mode, plan.Mode)
			assert.Equal(t, tc.skip, plan.SkipPrefill)
			assert.Equal(t, tc.prefill, string(plan.Prefill))
			body, outcome := plan.Decode(tc.prefillResp)
			assert.Equal(t, tc.decode, string(body))
			assert.Equal(t, tc.outcome, outcome)
			assert.NotContains(t, string(body), "bootstrap_room", "vLLM legs never get SGLang fields")
		})
	}
}
