package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

func fixedUUID() string { return "0190b6f4-7a3c-7def-8abc-0123456789ab" }

// smg-spec.md §11.3: connector mode from the prefill worker.
func TestConnectorFor(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name     string
		w        worker.Worker
		mode     string
		mooncake *handoff.Mooncake // expected fields (NewUUID not compared)
	}{
		{"mooncake with port and engine", worker.Worker{URL: "http://prefill-host:8000", KVConnector: "MooncakeConnector", BootstrapPort: ptr(9090), KVEngineID: "engine-1"},
			"mooncake", &handoff.Mooncake{Host: "prefill-host", Port: 9090, EngineID: "engine-1"}},
		{"mooncake without port or engine: 8998, no engine", worker.Worker{URL: "http://prefill-host:8000", KVConnector: "MooncakeConnector"},
			"mooncake", &handoff.Mooncake{Host: "prefill-host", Port: 8998}},
		{"mooncake empty engine id is none", worker.Worker{URL: "http://host:1", KVConnector: "MooncakeConnector", BootstrapPort: ptr(9090), KVEngineID: ""},
			"mooncake", &handoff.Mooncake{Host: "host", Port: 9090}},
		{"mooncake from labels", worker.Worker{URL: "http://h:1", Labels: map[string]string{"kv_connector": "MooncakeConnector", "kv_engine_id": "e", "bootstrap_port": "7000"}},
			"mooncake", &handoff.Mooncake{Host: "h", Port: 7000, EngineID: "e"}},
		{"nixl", worker.Worker{URL: "http://h:1", KVConnector: "NixlConnector", BootstrapPort: ptr(1)}, "nixl", nil},
		{"nixl from label", worker.Worker{URL: "http://h:1", Labels: map[string]string{"kv_connector": "NixlConnector"}}, "nixl", nil},
		{"names are exact", worker.Worker{URL: "http://h:1", KVConnector: "nixlconnector"}, "passthrough", nil},
		{"other connector", worker.Worker{URL: "http://h:1", KVConnector: "LMCacheConnector"}, "passthrough", nil},
		{"none", worker.Worker{URL: "http://h:1"}, "passthrough", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := handoff.ConnectorFor(tc.w, fixedUUID)
			require.NoError(t, err)
			assert.Equal(t, tc.mode, c.Mode())
			if tc.mooncake != nil {
				m, ok := c.(*handoff.Mooncake)
				require.True(t, ok)
				assert.Equal(t, tc.mooncake.Host, m.Host)
				assert.Equal(t, tc.mooncake.Port, m.Port)
				assert.Equal(t, tc.mooncake.EngineID, m.EngineID)
			}
		})
	}
}

func TestConnectorForSendsMoRIIOToItsOwnPath(t *testing.T) {
	t.Parallel()
	moriio := worker.Worker{URL: "http://p:8000", KVConnector: "MoRIIOConnector"}
	nixl := worker.Worker{URL: "http://d:8000", KVConnector: "NixlConnector"}
	for name, call := range map[string]func() (handoff.Connector, error){
		"prefill":      func() (handoff.Connector, error) { return handoff.ConnectorFor(moriio, fixedUUID) },
		"pair prefill": func() (handoff.Connector, error) { return handoff.ConnectorForPair(moriio, nixl, fixedUUID) },
		"pair decode":  func() (handoff.Connector, error) { return handoff.ConnectorForPair(nixl, moriio, fixedUUID) },
	} {
		c, err := call()
		assert.Nil(t, c, name)
		assert.ErrorIs(t, err, handoff.ErrMoRIIOPath, name)
	}
	c, err := handoff.ConnectorForPair(nixl, nixl, nil)
	require.NoError(t, err)
	assert.Equal(t, "nixl", c.Mode())

	_, err = handoff.ConnectorFor(worker.Worker{URL: "http://p:1", KVConnector: "MooncakeConnector", KVEngineID: "e"}, nil)
	assert.ErrorContains(t, err, "needs a transfer id generator")
}

// smg-spec.md §11.3: effective engine id (base, dp_size, dp_rank).
func TestEffectiveEngineID(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		w    worker.Worker
		id   string
		ok   bool
	}{
		{"dp size 2 rank 1", worker.Worker{KVEngineID: "eng", DPSize: ptr(2), DPRank: ptr(1)}, "eng_dp1", true},
		{"dp size 2 no rank", worker.Worker{KVEngineID: "eng", DPSize: ptr(2)}, "", false},
		{"no dp", worker.Worker{KVEngineID: "eng"}, "eng", true},
		{"empty id", worker.Worker{KVEngineID: ""}, "", false},
		{"no id with dp", worker.Worker{DPSize: ptr(2), DPRank: ptr(0)}, "", false},
		{"dp_size label not a number fails closed", worker.Worker{KVEngineID: "eng", Labels: map[string]string{"dp_size": "not-a-number"}}, "", false},
		{"dp_size label 1", worker.Worker{KVEngineID: "eng", Labels: map[string]string{"dp_size": "1"}}, "eng", true},
		{"dp_size label 0 fails closed", worker.Worker{KVEngineID: "eng", Labels: map[string]string{"dp_size": "0"}}, "", false},
		{"dp_size label 4 with rank", worker.Worker{KVEngineID: "eng", DPRank: ptr(3), Labels: map[string]string{"dp_size": "4"}}, "eng_dp3", true},
		{"dp-aware size wins over label", worker.Worker{KVEngineID: "eng", DPSize: ptr(1), Labels: map[string]string{"dp_size": "x"}}, "eng", true},
	}
	for _, tc := range cases {
		id, ok := handoff.EffectiveEngineID(tc.w)
		assert.Equal(t, tc.ok, ok, tc.name)
		assert.Equal(t, tc.id, id, tc.name)
	}
}

func TestMooncakeParamsExact(t *testing.T) {
	t.Parallel()
	m := &handoff.Mooncake{Host: "10.0.0.1", Port: 8998, EngineID: "engine-1", NewUUID: func() string { return "abc" }}
	tag, id := m.PrefillParams()
	assert.Equal(t, "xfer-abc", id)
	// smg-spec.md §11.4: exactly three keys on prefill, five on decode.
	assert.Equal(t, `{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"xfer-abc"}`, string(tag))
	params, outcome := m.DecodeParams([]byte(`{"ignored":true}`), id)
	assert.Equal(t, handoff.OutcomeMinted, outcome)
	assert.Equal(t, `{"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"xfer-abc","remote_engine_id":"engine-1","remote_bootstrap_addr":"http://10.0.0.1:8998"}`, string(params))

	v6, err := handoff.ConnectorFor(worker.Worker{URL: "http://[fd00::2]:8000", KVConnector: "MooncakeConnector", KVEngineID: "e"}, fixedUUID)
	require.NoError(t, err)
	_, id = v6.PrefillParams()
	params, _ = v6.DecodeParams(nil, id)
	assert.Equal(t, `{"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"xfer-0190b6f4-7a3c-7def-8abc-0123456789ab","remote_engine_id":"e","remote_bootstrap_addr":"http://[fd00::2]:8998"}`, string(params))

	none := &handoff.Mooncake{Host: "h", Port: 8998}
	tag, id = none.PrefillParams()
	assert.Nil(t, tag)
	assert.Empty(t, id)
	params, outcome = none.DecodeParams(nil, "")
	assert.Nil(t, params)
	assert.Equal(t, handoff.OutcomeRecompute, outcome)
}

func TestMooncakeMintsFreshIDs(t *testing.T) {
	t.Parallel()
	n := 0
	m := &handoff.Mooncake{Host: "h", Port: 1, EngineID: "e", NewUUID: func() string { n++; return string(rune('a' + n)) }}
	_, a := m.PrefillParams()
	_, b := m.PrefillParams()
	assert.Equal(t, "xfer-b", a)
	assert.Equal(t, "xfer-c", b)
}

func TestNixlAndPassthroughParams(t *testing.T) {
	t.Parallel()
	tag, id := handoff.Nixl{}.PrefillParams()
	assert.Equal(t, `{"do_remote_decode":true,"do_remote_prefill":false}`, string(tag))
	assert.Empty(t, id)
	odd := []byte(`{"remote_block_ids":[["1","2"],[3]],"remote_engine_id":"e","x":{"y":[null]}}`)
	p, o := handoff.Nixl{}.DecodeParams(odd, "")
	assert.Equal(t, string(odd), string(p))
	assert.Equal(t, handoff.OutcomeRelayed, o)
	p, o = handoff.Nixl{}.DecodeParams(nil, "")
	assert.Nil(t, p)
	assert.Equal(t, handoff.OutcomeKVTransferFailure, o)
	assert.True(t, o.CountsKVTransferFailure())
	assert.False(t, o.HandedOff())

	tag, _ = handoff.Passthrough{}.PrefillParams()
	assert.Nil(t, tag)
	p, o = handoff.Passthrough{}.DecodeParams(odd, "")
	assert.Equal(t, string(odd), string(p))
	assert.Equal(t, handoff.OutcomeRelayed, o)
	_, o = handoff.Passthrough{}.DecodeParams(nil, "")
	assert.Equal(t, handoff.OutcomeNoParams, o)
	assert.False(t, o.CountsKVTransferFailure())
}

func TestOutcomeNames(t *testing.T) {
	t.Parallel()
	names := map[handoff.Outcome]string{
		handoff.OutcomeRelayed: "relayed", handoff.OutcomeMinted: "minted", handoff.OutcomeNoParams: "no_params",
		handoff.OutcomeKVTransferFailure: "kv_transfer_failure", handoff.OutcomeRecompute: "recompute",
		handoff.OutcomeSkipPrefill: "skip_prefill", handoff.Outcome(0): "unknown",
	}
	for o, name := range names {
		assert.Equal(t, name, o.String())
	}
	assert.True(t, handoff.OutcomeMinted.HandedOff())
}

func TestMooncakeWithoutEngineIDSendsNoPrefillLeg(t *testing.T) {
	t.Parallel()
	req, err := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"m","prompt":"p","max_tokens":5}`))
	require.NoError(t, err)
	plan, err := handoff.PlanSequential(&handoff.Mooncake{Host: "h", Port: 8998, NewUUID: func() string { return "u" }}, req)
	require.NoError(t, err)
	assert.True(t, plan.SkipPrefill)
	assert.Nil(t, plan.Prefill)
	body, outcome := plan.Decode(nil)
	assert.Equal(t, handoff.OutcomeRecompute, outcome)
	assert.JSONEq(t, `{"model":"m","prompt":"p","max_tokens":5}`, string(body))

	plan, err = handoff.PlanSequential(&handoff.Mooncake{Host: "h", Port: 8998, EngineID: "e", NewUUID: func() string { return "u" }}, req)
	require.NoError(t, err)
	assert.False(t, plan.SkipPrefill, "with an engine id the prefill leg runs")
}
