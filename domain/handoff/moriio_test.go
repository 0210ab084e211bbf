package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

func moriioWorker(url string, labels map[string]string) worker.Worker {
	return worker.Worker{URL: url, Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector", Labels: labels}
}

func with(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "<unset>" {
			delete(m, kv[i])
			continue
		}
		m[kv[i]] = kv[i+1]
	}
	return m
}

var (
	writeLabels = map[string]string{"moriio_mode": "write"}
	readLabels  = map[string]string{"moriio_mode": "read"}
)

// Seed "MoRI-IO (HTTP)": every rule that refuses a pair with 503 moriio_pair_misconfigured,
// and the pairs it accepts.
func TestCheckMoRIIOPair(t *testing.T) {
	t.Parallel()
	const p, d = "http://10.0.0.1:8000", "http://10.0.0.2:8000"
	conc := with(writeLabels, "moriio_write_dispatch", "concurrent")
	two := 2
	reject := []struct {
		name, leg       string
		prefill, decode worker.Worker
		reasonContains  string
	}{
		{"prefill not MoRI-IO", "prefill", worker.Worker{URL: p, KVConnector: "NixlConnector", Labels: writeLabels}, moriioWorker(d, writeLabels), "not a MoRIIOConnector"},
		{"decode not MoRI-IO", "decode", moriioWorker(p, writeLabels), worker.Worker{URL: d, Labels: writeLabels}, "not a MoRIIOConnector"},
		{"different modes", "", moriioWorker(p, readLabels), moriioWorker(d, writeLabels), "read mode"},
		{"DP>1 by field", "prefill", func() worker.Worker { w := moriioWorker(p, writeLabels); w.DPSize = &two; return w }(), moriioWorker(d, writeLabels), "DP size 2"},
		{"DP>1 by label", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "dp_size", "4")), "DP size 4"},
		{"unparsable dp_size", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "dp_size", "x")), "dp_size"},
		{"missing mode", "prefill", moriioWorker(p, nil), moriioWorker(d, writeLabels), "no moriio_mode"},
		{"invalid mode", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_mode", "push")), "moriio_mode"},
		{"host with whitespace", "prefill", moriioWorker(p, with(writeLabels, "moriio_host", "a b")), moriioWorker(d, writeLabels), "moriio_host"},
		{"empty host", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_host", "")), "moriio_host"},
		{"unparsable handshake port", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_handshake_port", "six")), "moriio_handshake_port"},
		{"handshake port 0", "prefill", moriioWorker(p, with(writeLabels, "moriio_handshake_port", "0")), moriioWorker(d, writeLabels), "moriio_handshake_port"},
		{"notify port out of range", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_notify_port", "70000")), "moriio_notify_port"},
		{"bad write dispatch on decode", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_write_dispatch", "parallel")), "moriio_write_dispatch"},
		{"bad write dispatch on prefill", "prefill", moriioWorker(p, with(writeLabels, "moriio_write_dispatch", "")), moriioWorker(d, writeLabels), "moriio_write_dispatch"},
		{"bad write dispatch on a READ pair", "decode", moriioWorker(p, readLabels), moriioWorker(d, with(readLabels, "moriio_write_dispatch", "Concurrent")), "moriio_write_dispatch"},
		{"bad tp_size", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "tp_size", "0")), "tp_size"},
		{"WRITE decode on localhost", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_host", "localhost")), "loopback"},
		{"WRITE decode on 127.0.0.1", "decode", moriioWorker(p, writeLabels), moriioWorker("http://127.0.0.1:8000", writeLabels), "loopback"},
		{"WRITE decode on 0.0.0.0", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_host", "0.0.0.0")), "loopback"},
		{"WRITE decode on [::]", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_host", "[::]")), "loopback"},
		{"WRITE decode is the prefill's side channel", "decode", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_host", "10.0.0.1")), "prefill's own"},
		{"WRITE decode shares the prefill's notify port", "decode", moriioWorker(p, with(writeLabels, "moriio_handshake_port", "7000")), moriioWorker(d, with(writeLabels, "moriio_host", "10.0.0.1")), "prefill's own"},
		{"concurrent prefill on loopback", "prefill", moriioWorker("http://127.0.0.1:8000", writeLabels), moriioWorker(d, conc), "concurrent"},
		{"concurrent prefill host [::]", "prefill", moriioWorker(p, with(writeLabels, "moriio_host", "[::]")), moriioWorker(d, conc), "concurrent"},
	}
	for _, tc := range reject {
		t.Run("reject/"+tc.name, func(t *testing.T) {
			pair, ref := handoff.CheckMoRIIOPair(tc.prefill, tc.decode)
			require.NotNil(t, ref, "want a refusal")
			assert.Nil(t, pair)
			e := ref.Err()
			assert.Equal(t, 503, e.Status)
			assert.Equal(t, "moriio_pair_misconfigured", e.Code)
			assert.False(t, e.Retryable)
			assert.Equal(t, tc.leg, e.Leg)
			assert.Contains(t, ref.Reason, tc.reasonContains)
			assert.NotContains(t, e.Message, "10.0.0", "the reason stays in the log")
		})
	}

	accept := []struct {
		name                string
		prefill, decode     worker.Worker
		write, concurrent   bool
		pHost, dHost        string
		dHandshake, dNotify int
	}{
		{"seed WRITE defaults", moriioWorker("http://prefill-0:8000", writeLabels), moriioWorker("http://decode-0:8000", writeLabels), true, false, "prefill-0", "decode-0", 6301, 61005},
		{"READ on loopback", moriioWorker("http://127.0.0.1:1", readLabels), moriioWorker("http://127.0.0.1:2", readLabels), false, false, "127.0.0.1", "127.0.0.1", 6301, 61005},
		{"READ decode loopback, prefill not (READ pulls)", moriioWorker(p, readLabels), moriioWorker("http://localhost:2", readLabels), false, false, "10.0.0.1", "localhost", 6301, 61005},
		{"READ ignores the decode's concurrent label", moriioWorker(p, readLabels), moriioWorker(d, with(readLabels, "moriio_write_dispatch", "concurrent")), false, false, "10.0.0.1", "10.0.0.2", 6301, 61005},
		{"WRITE both loopback, own ports", moriioWorker("http://127.0.0.1:1", writeLabels), moriioWorker("http://127.0.0.1:2", with(writeLabels, "moriio_handshake_port", "7301", "moriio_notify_port", "7005")), true, false, "127.0.0.1", "127.0.0.1", 7301, 7005},
		{"WRITE host label wins", moriioWorker(p, writeLabels), moriioWorker(d, with(writeLabels, "moriio_host", "rdma-2.example")), true, false, "10.0.0.1", "rdma-2.example", 6301, 61005},
		{"WRITE IPv6 URL host", moriioWorker("http://[fd00::1]:8000", writeLabels), moriioWorker("http://[fd00::2]:8000", writeLabels), true, false, "[fd00::1]", "[fd00::2]", 6301, 61005},
		{"concurrent on the decode", moriioWorker(p, writeLabels), moriioWorker(d, conc), true, true, "10.0.0.1", "10.0.0.2", 6301, 61005},
		{"concurrent only on the prefill stays sequential", moriioWorker(p, conc), moriioWorker(d, writeLabels), true, false, "10.0.0.1", "10.0.0.2", 6301, 61005},
		{"explicit sequential, tp and dp 1", moriioWorker(p, with(writeLabels, "tp_size", "4", "dp_size", "1")), moriioWorker(d, with(writeLabels, "moriio_write_dispatch", "sequential", "tp_size", "8")), true, false, "10.0.0.1", "10.0.0.2", 6301, 61005},
		{"kv_connector as a label", worker.Worker{URL: p, Labels: with(writeLabels, "kv_connector", "MoRIIOConnector")}, moriioWorker(d, writeLabels), true, false, "10.0.0.1", "10.0.0.2", 6301, 61005},
	}
	for _, tc := range accept {
		t.Run("accept/"+tc.name, func(t *testing.T) {
			pair, ref := handoff.CheckMoRIIOPair(tc.prefill, tc.decode)
			require.Nil(t, ref, "refused: %+v", ref)
			assert.Equal(t, tc.write, pair.Write())
			assert.Equal(t, tc.concurrent, pair.Concurrent)
			assert.Equal(t, tc.pHost, pair.Prefill.Host)
			assert.Equal(t, tc.dHost, pair.Decode.Host)
			assert.Equal(t, tc.dHandshake, pair.Decode.HandshakePort)
			assert.Equal(t, tc.dNotify, pair.Decode.NotifyPort)
		})
	}
}

// Seed "MoRI-IO (HTTP)": the request refusals (400 fan-out, 400 reserved request id, 501
// route) and what passes.
func TestCheckMoRIIORequest(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		route  handoff.Route
		body   string
		ids    []string
		status int
		code   string
	}{
		{"generate route", handoff.RouteGenerate, `{"text":"hi"}`, nil, 501, "moriio_route_unsupported"},
		{"messages route", handoff.RouteMessages, `{"messages":[]}`, nil, 501, "moriio_route_unsupported"},
		{"responses route", handoff.RouteResponses, `{"input":"hi"}`, nil, 501, "moriio_route_unsupported"},
		{"chat n=2", handoff.RouteChat, `{"messages":[],"n":2}`, nil, 400, "moriio_fanout_unsupported"},
		{"completions n=3", handoff.RouteCompletions, `{"prompt":"a","n":3}`, nil, 400, "moriio_fanout_unsupported"},
		{"batched prompt", handoff.RouteCompletions, `{"prompt":["a","b"]}`, nil, 400, "moriio_fanout_unsupported"},
		{"batched token prompts", handoff.RouteCompletions, `{"prompt":[[1,2],[3]]}`, nil, 400, "moriio_fanout_unsupported"},
		{"prompt_embeds list", handoff.RouteCompletions, `{"prompt_embeds":["AAA=","BBB="]}`, nil, 400, "moriio_fanout_unsupported"},
		{"beam search", handoff.RouteChat, `{"messages":[],"use_beam_search":true}`, nil, 400, "moriio_fanout_unsupported"},
		{"prefill marker in X-Request-Id", handoff.RouteChat, `{"messages":[]}`, []string{"abc___prefill_addr_10.0.0.1:6301"}, 400, "moriio_request_id_reserved"},
		{"decode marker in a second X-Request-Id value", handoff.RouteChat, `{"messages":[]}`, []string{"ok", "x___decode_addr_h"}, 400, "moriio_request_id_reserved"},
		{"marker in body request_id", handoff.RouteCompletions, `{"prompt":"a","request_id":"r___decode_addr_1.2.3.4"}`, []string{"clean"}, 400, "moriio_request_id_reserved"},
		{"chat ok", handoff.RouteChat, `{"messages":[],"n":1,"use_beam_search":false,"request_id":"plain"}`, []string{"plain-id"}, 0, ""},
		{"completions single prompt list ok", handoff.RouteCompletions, `{"prompt":["only"]}`, nil, 0, ""},
		{"completions token ids ok", handoff.RouteCompletions, `{"prompt":[1,2,3]}`, nil, 0, ""},
		{"one prompt_embeds ok", handoff.RouteCompletions, `{"prompt_embeds":"AAA="}`, nil, 0, ""},
		{"single marker-like text ok", handoff.RouteChat, `{"messages":[]}`, []string{"__prefill_addr"}, 0, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rq, err := handoff.Inspect(tc.route, []byte(tc.body))
			require.NoError(t, err)
			err = handoff.CheckMoRIIORequest(rq, tc.ids)
			if tc.status == 0 {
				assert.NoError(t, err)
				return
			}
			e, ok := errs.As(err)
			require.True(t, ok, "want *errs.Error, got %v", err)
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.code, e.Code)
			assert.False(t, e.Retryable)
		})
	}
}
