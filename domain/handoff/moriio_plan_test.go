package handoff_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

const xfer = "xfer-0190b6f4-7a3c-7def-8abc-0123456789ab"

func plan(t *testing.T, pLabels, dLabels map[string]string, route handoff.Route, body string) *handoff.MoRIIOPlan {
	t.Helper()
	pair, ref := handoff.CheckMoRIIOPair(moriioWorker("http://10.0.0.1:8000", pLabels), moriioWorker("http://10.0.0.2:8000", dLabels))
	require.Nil(t, ref)
	rq, err := handoff.Inspect(route, []byte(body))
	require.NoError(t, err)
	p, err := handoff.PlanMoRIIO(pair, rq, fixedUUID)
	require.NoError(t, err)
	return p
}

// Seed "Connector Modes" MoRIIOConnector row: the exact prefill and decode legs.
func TestPlanMoRIIOLegs(t *testing.T) {
	t.Parallel()
	const chat = `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9,"stream":true,"stop":["x"],"stop_token_ids":[7],"min_tokens":2}`
	t.Run("READ", func(t *testing.T) {
		p := plan(t, readLabels, with(readLabels, "tp_size", "8"), handoff.RouteChat, chat)
		assert.Equal(t, xfer, p.TransferID)
		assert.Equal(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"`+xfer+`","remote_dp_size":1,"remote_tp_size":8},"ignore_eos":true}`, string(p.Prefill))
		assert.Nil(t, p.Decode, "sequential: decode built from the handoff")
		params := []byte(`{"remote_engine_id":"e"}`)
		assert.Equal(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":9,"stream":true,"stop":["x"],"stop_token_ids":[7],"min_tokens":2,"kv_transfer_params":{"remote_engine_id":"e"}}`, string(p.DecodeBody(params)), "decode keeps the client's stop conditions")
	})
	t.Run("sequential WRITE names the decode side channel", func(t *testing.T) {
		p := plan(t, writeLabels, with(writeLabels, "moriio_host", "rdma-d", "moriio_handshake_port", "7301", "moriio_notify_port", "7005"), handoff.RouteCompletions, `{"model":"m","prompt":"hi","max_tokens":5,"ignore_eos":false}`)
		assert.Equal(t, `{"model":"m","prompt":"hi","max_tokens":1,"ignore_eos":true,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"`+xfer+`","remote_dp_size":1,"remote_host":"rdma-d","remote_handshake_port":7301,"remote_notify_port":7005}}`, string(p.Prefill))
		assert.Nil(t, p.Decode)
	})
	t.Run("concurrent WRITE mints the decode params from the prefill labels", func(t *testing.T) {
		p := plan(t, with(writeLabels, "tp_size", "4", "moriio_notify_port", "62000"), with(writeLabels, "moriio_write_dispatch", "concurrent"), handoff.RouteChat,
			`{"model":"m","messages":[],"max_completion_tokens":9,"stop":"s"}`)
		assert.Equal(t, `{"model":"m","messages":[],"max_completion_tokens":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"`+xfer+`","remote_dp_size":1,"remote_host":"10.0.0.2","remote_handshake_port":6301,"remote_notify_port":61005},"ignore_eos":true}`, string(p.Prefill))
		assert.Equal(t, `{"model":"m","messages":[],"max_completion_tokens":9,"stop":"s","kv_transfer_params":{"do_remote_decode":false,"do_remote_prefill":true,"transfer_id":"`+xfer+`","remote_dp_size":1,"remote_host":"10.0.0.1","remote_handshake_port":6301,"remote_notify_port":62000,"remote_tp_size":4}}`, string(p.Decode))
	})
}

const goodHandoff = `{"do_remote_prefill":true,"do_remote_decode":false,"transfer_id":"` + xfer + `","remote_engine_id":"eng-1","remote_block_ids":[1,2,3],"remote_host":"10.0.0.1","remote_handshake_port":6301,"remote_notify_port":61005,"remote_dp_size":1,"tp_size":1}`

// replaceField rewrites one field of goodHandoff (value "" deletes it).
func replaceField(key, value string) string {
	start := strings.Index(goodHandoff, `"`+key+`":`)
	if start < 0 {
		panic(key)
	}
	end := start + len(key) + 3
	depth := 0
	for ; end < len(goodHandoff); end++ {
		c := goodHandoff[end]
		if c == '[' {
			depth++
		}
		if c == ']' {
			depth--
		}
		if depth == 0 && (c == ',' || c == '}') {
			break
		}
	}
	if value == "" {
		if goodHandoff[end] == ',' {
			end++
		}
		return goodHandoff[:start] + goodHandoff[end:]
	}
	return goodHandoff[:start] + `"` + key + `":` + value + goodHandoff[end:]
}

// Seed "MoRI-IO (HTTP)": every handoff validation rule, accepted and rejected shapes.
func TestValidateMoRIIOHandoff(t *testing.T) {
	t.Parallel()
	accept := map[string]string{
		"as the engine returns":       goodHandoff,
		"block ids per KV group":      replaceField("remote_block_ids", `[[1,2],[3,4]]`),
		"hostname":                    replaceField("remote_host", `"prefill-0.rdma.example"`),
		"ports as strings":            replaceField("remote_handshake_port", `"6301"`),
		"notify port as a string":     replaceField("remote_notify_port", `"61005"`),
		"dp size as a decimal string": replaceField("remote_dp_size", `"1"`),
		"tp size null":                replaceField("tp_size", `null`),
		"counts absent":               replaceField("remote_dp_size", ""),
		"dp rank 0 and local size":    strings.TrimSuffix(goodHandoff, "}") + `,"remote_dp_rank":0,"remote_dp_size_local":"1","remote_tp_size":"8"}`,
		"extra keys relayed":          strings.TrimSuffix(goodHandoff, "}") + `,"vendor":{"x":1}}`,
	}
	for name, h := range accept {
		t.Run("accept/"+name, func(t *testing.T) {
			assert.NoError(t, handoff.ValidateMoRIIOHandoff([]byte(h), xfer, nil))
		})
	}
	reject := map[string]string{
		"no transfer_id":            replaceField("transfer_id", ""),
		"foreign transfer_id":       replaceField("transfer_id", `"xfer-other"`),
		"numeric transfer_id":       replaceField("transfer_id", `7`),
		"no engine id":              replaceField("remote_engine_id", ""),
		"empty engine id":           replaceField("remote_engine_id", `""`),
		"engine id not a string":    replaceField("remote_engine_id", `12`),
		"no block ids":              replaceField("remote_block_ids", ""),
		"empty block ids":           replaceField("remote_block_ids", `[]`),
		"string block ids":          replaceField("remote_block_ids", `["1","2"]`),
		"fractional block id":       replaceField("remote_block_ids", `[1.5]`),
		"negative block id":         replaceField("remote_block_ids", `[-1]`),
		"mixed flat and nested":     replaceField("remote_block_ids", `[[1],2]`),
		"empty group":               replaceField("remote_block_ids", `[[1],[]]`),
		"block ids an object":       replaceField("remote_block_ids", `{"0":[1]}`),
		"no host":                   replaceField("remote_host", ""),
		"empty host":                replaceField("remote_host", `""`),
		"host with a space":         replaceField("remote_host", `"10.0.0.1 "`),
		"host with a tab":           replaceField("remote_host", `"a\tb"`),
		"host not a string":         replaceField("remote_host", `[1]`),
		"no handshake port":         replaceField("remote_handshake_port", ""),
		"handshake port 0":          replaceField("remote_handshake_port", `0`),
		"handshake port 65536":      replaceField("remote_handshake_port", `65536`),
		"handshake port float":      replaceField("remote_handshake_port", `6301.0`),
		"notify port not numeric":   replaceField("remote_notify_port", `"sixty"`),
		"notify port null":          replaceField("remote_notify_port", `null`),
		"notify port string zero":   replaceField("remote_notify_port", `"0"`),
		"dp size negative":          replaceField("remote_dp_size", `-1`),
		"dp size float string":      replaceField("remote_dp_size", `"1.0"`),
		"tp size a bool":            replaceField("tp_size", `true`),
		"remote_tp_size list":       strings.TrimSuffix(goodHandoff, "}") + `,"remote_tp_size":[8]}`,
		"remote_dp_rank signed str": strings.TrimSuffix(goodHandoff, "}") + `,"remote_dp_rank":"-0"}`,
		"params not an object":      `[1]`,
	}
	for name, h := range reject {
		t.Run("reject/"+name, func(t *testing.T) {
			assertHandoffInvalid(t, handoff.ValidateMoRIIOHandoff([]byte(h), xfer, nil))
		})
	}
	t.Run("reject/missing", func(t *testing.T) {
		assertHandoffInvalid(t, handoff.ValidateMoRIIOHandoff(nil, xfer, nil))
	})
	t.Run("concurrent ports must match what the decode was told", func(t *testing.T) {
		assert.NoError(t, handoff.ValidateMoRIIOHandoff([]byte(goodHandoff), xfer, &[2]int{6301, 61005}))
		assert.NoError(t, handoff.ValidateMoRIIOHandoff([]byte(replaceField("remote_notify_port", `"61005"`)), xfer, &[2]int{6301, 61005}))
		assertHandoffInvalid(t, handoff.ValidateMoRIIOHandoff([]byte(goodHandoff), xfer, &[2]int{6302, 61005}))
		assertHandoffInvalid(t, handoff.ValidateMoRIIOHandoff([]byte(goodHandoff), xfer, &[2]int{6301, 61006}))
	})
}

func assertHandoffInvalid(t *testing.T, err error) {
	t.Helper()
	e, ok := errs.As(err)
	require.True(t, ok, "want *errs.Error, got %v", err)
	assert.Equal(t, 502, e.Status)
	assert.Equal(t, "moriio_handoff_invalid", e.Code)
	assert.Equal(t, "prefill", e.Leg)
}

// CheckHandoff harvests the response's params and checks them against the plan.
func TestMoRIIOPlanCheckHandoff(t *testing.T) {
	t.Parallel()
	p := plan(t, writeLabels, writeLabels, handoff.RouteCompletions, `{"prompt":"a"}`)
	got, err := p.CheckHandoff([]byte(`{"choices":[],"kv_transfer_params":` + goodHandoff + `}`))
	require.NoError(t, err)
	assert.Equal(t, goodHandoff, string(got), "relayed verbatim")
	_, err = p.CheckHandoff([]byte(`{"choices":[]}`))
	assertHandoffInvalid(t, err)
	_, err = p.CheckHandoff([]byte(`{"kv_transfer_params":{}}`))
	assertHandoffInvalid(t, err)

	c := plan(t, with(writeLabels, "moriio_handshake_port", "7000"), with(writeLabels, "moriio_write_dispatch", "concurrent"), handoff.RouteCompletions, `{"prompt":"a"}`)
	_, err = c.CheckHandoff([]byte(`{"kv_transfer_params":` + goodHandoff + `}`))
	assertHandoffInvalid(t, err)
	_, err = c.CheckHandoff([]byte(`{"kv_transfer_params":` + replaceField("remote_handshake_port", "7000") + `}`))
	assert.NoError(t, err)
}

// ValidateMoRIIOHandoff never panics, and what it accepts carries the minted transfer id
// and the ports it was asked to match.
func FuzzValidateMoRIIOHandoff(f *testing.F) {
	f.Add([]byte(goodHandoff))
	f.Add([]byte(replaceField("remote_block_ids", `[[1],[2,3]]`)))
	f.Add([]byte(replaceField("remote_handshake_port", `"6301"`)))
	f.Add([]byte(`{"transfer_id":"` + xfer + `"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, params []byte) {
		err := handoff.ValidateMoRIIOHandoff(params, xfer, &[2]int{6301, 61005})
		if err != nil {
			assertHandoffInvalid(t, err)
			return
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal(params, &m))
		assert.Equal(t, xfer, m["transfer_id"])
	})
}
