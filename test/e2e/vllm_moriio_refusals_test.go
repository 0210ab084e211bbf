package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
)

// moriRecorders is a gateway in front of two Recorders registered as a vLLM pair: the
// prefill answers with the handoff handoff(transferID, testCase) builds (testCase is the
// client body's "test_case", which the prefill leg keeps), the decode with a completion.
type moriRecorders struct {
	g        *fleet.Gateway
	pre, dec *fleet.Recorder
}

const decodeAnswer = `{"id":"d","object":"text_completion","model":"sim-model","choices":[{"index":0,"text":"decoded","finish_reason":"length"}]}`

func startMoRIRecorders(t *testing.T, pSpec, dSpec map[string]any, handoff func(transferID, testCase string) string, gw func(*config.Config)) *moriRecorders {
	t.Helper()
	if handoff == nil {
		handoff = func(id, _ string) string { return validHandoff(id) }
	}
	pre := fleet.NewRecorder(t, "vllm", model, func(w http.ResponseWriter, _ *http.Request, body []byte) {
		var b struct {
			KV struct {
				TransferID string `json:"transfer_id"`
			} `json:"kv_transfer_params"`
			Case string `json:"test_case"`
		}
		_ = json.Unmarshal(body, &b)
		fleet.WriteJSON(w, http.StatusOK, `{"id":"p","object":"text_completion","model":"sim-model","choices":[{"index":0,"text":"x","finish_reason":"length"}],"kv_transfer_params":`+handoff(b.KV.TransferID, b.Case)+`}`)
	})
	dec := fleet.NewRecorder(t, "vllm", model, func(w http.ResponseWriter, _ *http.Request, _ []byte) {
		fleet.WriteJSON(w, http.StatusOK, decodeAnswer)
	})
	cfg := fleet.DefaultConfig()
	cfg.PairingMode = "off" // let the gateway select the pairs the MoRI-IO checks refuse
	cfg.DisableRetries = true
	if gw != nil {
		gw(&cfg)
	}
	g := fleet.StartGateway(t, cfg)
	pSpec["url"], pSpec["worker_type"], pSpec["runtime_type"] = pre.URL, "prefill", "vllm"
	dSpec["url"], dSpec["worker_type"], dSpec["runtime_type"] = dec.URL, "decode", "vllm"
	g.Register(t, pSpec)
	g.Register(t, dSpec)
	g.WaitWorkers(t, 2)
	return &moriRecorders{g: g, pre: pre, dec: dec}
}

// validHandoff is a handoff as the engine returns it, for transfer id id.
func validHandoff(id string) string {
	return `{"do_remote_prefill":true,"do_remote_decode":false,"transfer_id":"` + id + `","remote_engine_id":"eng-p","remote_block_ids":[[1,2]],"remote_host":"127.0.0.1","remote_handshake_port":6301,"remote_notify_port":61005,"remote_dp_size":1,"tp_size":1}`
}

// mori is a MoRIIOConnector worker spec with labels (nil labels: none at all).
func mori(labels map[string]string) map[string]any {
	s := map[string]any{"kv_connector": "MoRIIOConnector"}
	if labels != nil {
		s["labels"] = labels
	}
	return s
}

// A recorder pair shares 127.0.0.1: the decode gets its own side-channel ports.
var decPorts = map[string]string{"moriio_handshake_port": "7301", "moriio_notify_port": "7005"}

func labels(base map[string]string, kv ...string) map[string]string {
	m := map[string]string{}
	for k, v := range base {
		m[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

func assertRefused(t *testing.T, r *fleet.Response, status int, code string) {
	t.Helper()
	require.Equal(t, status, r.Status, "%s", r.Body)
	assert.Equal(t, code, r.Header.Get(wire.HeaderErrorCode))
	assert.Equal(t, code, decodeError(t, r).Error.Code)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
}

// Seed "MoRI-IO (HTTP)": every misconfigured pair is refused with 503
// moriio_pair_misconfigured before either leg is contacted, and counted in
// smg_pd_kv_transfer_failures_total.
func TestMoRIIOMisconfiguredPairsAreRefused(t *testing.T) {
	t.Parallel()
	w := map[string]string{"moriio_mode": "write"}
	wd := labels(w, "moriio_handshake_port", "7301", "moriio_notify_port", "7005")
	for _, tc := range []struct {
		name    string
		p, d    map[string]any
		message string
	}{
		{"prefill is not a MoRI-IO worker", map[string]any{"kv_connector": "NixlConnector", "labels": w}, mori(wd), ""},
		{"decode is not a MoRI-IO worker", mori(w), map[string]any{"kv_connector": "NixlConnector"}, ""},
		{"legs in different modes", mori(map[string]string{"moriio_mode": "read"}), mori(wd), ""},
		{"a worker with DP>1", mori(labels(w, "dp_size", "2")), mori(wd), ""},
		{"missing moriio_mode", mori(w), mori(nil), ""},
		{"invalid moriio_mode", mori(labels(w, "moriio_mode", "both")), mori(wd), ""},
		{"unparsable notify port", mori(w), mori(labels(wd, "moriio_notify_port", "sixty")), ""},
		{"invalid handshake port", mori(labels(w, "moriio_handshake_port", "0")), mori(wd), ""},
		{"invalid moriio_host", mori(w), mori(labels(wd, "moriio_host", "a host")), ""},
		{"invalid tp_size", mori(w), mori(labels(wd, "tp_size", "eight")), ""},
		{"bad moriio_write_dispatch on the decode", mori(w), mori(labels(wd, "moriio_write_dispatch", "parallel")), ""},
		{"bad moriio_write_dispatch on the prefill", mori(labels(w, "moriio_write_dispatch", "later")), mori(wd), ""},
		{"WRITE decode on loopback, prefill not", mori(labels(w, "moriio_host", "10.20.30.40")), mori(wd), ""},
		{"WRITE decode on the unspecified address", mori(labels(w, "moriio_host", "10.20.30.40")), mori(labels(wd, "moriio_host", "0.0.0.0")), ""},
		{"WRITE decode names the prefill's own side channel", mori(w), mori(w), ""},
		{"concurrent prefill on loopback, decode not", mori(w), mori(labels(wd, "moriio_host", "10.20.30.41", "moriio_write_dispatch", "concurrent")), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startMoRIRecorders(t, tc.p, tc.d, nil, nil)
			for _, a := range moriAPIs {
				r := f.g.Post(t, a.path, a.body("refused pair", 3, false), nil)
				assertRefused(t, r, http.StatusServiceUnavailable, "moriio_pair_misconfigured")
				assert.Contains(t, decodeError(t, r).Error.Message, "gateway log")
			}
			assert.Empty(t, f.pre.Requests(), "prefill never contacted")
			assert.Empty(t, f.dec.Requests(), "decode never contacted")
			m := f.g.Metrics(t)
			assert.Equal(t, float64(len(moriAPIs)), m.Sum("smg_pd_kv_transfer_failures_total"), "each refusal counted")
			assert.Zero(t, m.Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"), "no dispatch")
		})
	}
}

// Seed "MoRI-IO (HTTP)": fan-out (400 moriio_fanout_unsupported), request ids with peer
// markers (400 moriio_request_id_reserved) and other routes (501 moriio_route_unsupported)
// are refused before either leg is contacted; a refusal of the request is not a transfer
// failure.
func TestMoRIIORequestRefusals(t *testing.T) {
	t.Parallel()
	f := startMoRIRecorders(t, mori(map[string]string{"moriio_mode": "write"}), mori(labels(decPorts, "moriio_mode", "write")), nil, nil)
	chat := func(extra map[string]any) map[string]any {
		b := apiChat.body("refused request", 3, false)
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	comp := func(extra map[string]any) map[string]any {
		b := apiCompletions.body("refused request", 3, false)
		for k, v := range extra {
			b[k] = v
		}
		return b
	}
	for _, tc := range []struct {
		name, path string
		body       map[string]any
		hdr        http.Header
		status     int
		code       string
	}{
		{"chat n=2", apiChat.path, chat(map[string]any{"n": 2}), nil, 400, "moriio_fanout_unsupported"},
		{"completions n=4", apiCompletions.path, comp(map[string]any{"n": 4}), nil, 400, "moriio_fanout_unsupported"},
		{"batched prompt", apiCompletions.path, comp(map[string]any{"prompt": []string{"one", "two"}}), nil, 400, "moriio_fanout_unsupported"},
		{"prompt_embeds list", apiCompletions.path, comp(map[string]any{"prompt_embeds": []string{"AAAA", "BBBB"}}), nil, 400, "moriio_fanout_unsupported"},
		{"beam search", apiChat.path, chat(map[string]any{"use_beam_search": true}), nil, 400, "moriio_fanout_unsupported"},
		{"X-Request-Id with a prefill marker", apiChat.path, chat(nil), http.Header{"X-Request-Id": {"r___prefill_addr_10.0.0.1:6301"}}, 400, "moriio_request_id_reserved"},
		{"second X-Request-Id value with a decode marker", apiCompletions.path, comp(nil), http.Header{"X-Request-Id": {"fine", "r___decode_addr_10.0.0.2"}}, 400, "moriio_request_id_reserved"},
		{"body request_id with a decode marker", apiCompletions.path, comp(map[string]any{"request_id": "x___decode_addr_h:1"}), nil, 400, "moriio_request_id_reserved"},
		{"responses route", apiResponses.path, apiResponses.body("refused", 3, false), nil, 501, "moriio_route_unsupported"},
		{"messages route", apiMessages.path, apiMessages.body("refused", 3, false), nil, 501, "moriio_route_unsupported"},
		{"generate route", apiGenerate.path, apiGenerate.body("refused", 3, false), nil, 501, "moriio_route_unsupported"},
	} {
		r := f.g.Post(t, tc.path, tc.body, tc.hdr)
		assertRefused(t, r, tc.status, tc.code)
	}
	assert.Empty(t, f.pre.Requests(), "prefill never contacted")
	assert.Empty(t, f.dec.Requests(), "decode never contacted")
	m := f.g.Metrics(t)
	assert.Zero(t, m.Sum("smg_pd_kv_transfer_failures_total"))
	assert.Zero(t, m.Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))

	// The same pair serves a clean request.
	r := f.g.Post(t, apiCompletions.path, comp(map[string]any{"request_id": "plain"}), http.Header{"X-Request-Id": {"plain-id"}})
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	assert.Len(t, f.pre.Requests(), 1)
	assert.Len(t, f.dec.Requests(), 1)
}

// Seed "Connector Modes" MoRIIOConnector row: the exact legs of a sequential WRITE pair and
// of a READ pair.
func TestMoRIIOSequentialLegBodies(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"read", "write"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			f := startMoRIRecorders(t, mori(map[string]string{"moriio_mode": mode, "tp_size": "2"}),
				mori(labels(decPorts, "moriio_mode", mode, "tp_size", "4")), nil, nil)
			client := `{"model":"sim-model","prompt":"exact legs","max_tokens":7,"stop":["\n"],"stop_token_ids":[2],"stream":false}`
			r := f.g.Post(t, apiCompletions.path, client, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
			assert.JSONEq(t, decodeAnswer, string(r.Body))
			pre, dec := f.pre.Requests(), f.dec.Requests()
			require.Len(t, pre, 1)
			require.Len(t, dec, 1)
			var kv struct {
				KV map[string]any `json:"kv_transfer_params"`
			}
			require.NoError(t, json.Unmarshal(pre[0].Body, &kv))
			id, _ := kv.KV["transfer_id"].(string)
			require.True(t, strings.HasPrefix(id, "xfer-"), "minted transfer_id %q", id)
			side := ""
			if mode == "write" {
				side = `,"remote_host":"127.0.0.1","remote_handshake_port":7301,"remote_notify_port":7005`
			}
			assert.Equal(t, `{"model":"sim-model","prompt":"exact legs","max_tokens":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false,"transfer_id":"`+id+`","remote_dp_size":1,"remote_tp_size":4`+side+`},"ignore_eos":true}`, string(pre[0].Body))
			assert.Equal(t, `{"model":"sim-model","prompt":"exact legs","max_tokens":7,"stop":["\n"],"stop_token_ids":[2],"stream":false,"kv_transfer_params":`+validHandoff(id)+`}`, string(dec[0].Body), "the handoff relayed verbatim; the client's stop conditions kept")
			assert.Equal(t, pre[0].Header.Get("X-Request-Id"), dec[0].Header.Get("X-Request-Id"))
			assert.NotEmpty(t, pre[0].Header.Get("X-Request-Id"))
			assert.Equal(t, 1.0, f.g.Metrics(t).Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))
		})
	}
}
