package e2e_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
)

// Seed "MoRI-IO (HTTP)": every handoff validation rule. Under sequential dispatch (READ and
// WRITE) a handoff that fails answers 502 moriio_handoff_invalid, no decode leg is sent and
// the failure is counted; an accepted one reaches the decode verbatim.
func TestMoRIIOHandoffValidation(t *testing.T) {
	t.Parallel()
	swap := func(h, key, value string) string {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(h), &m); err != nil {
			panic(err)
		}
		if value == "" {
			delete(m, key)
		} else {
			m[key] = json.RawMessage(value)
		}
		b, _ := json.Marshal(m)
		return string(b)
	}
	reject := map[string]func(id string) string{
		"missing":                      func(string) string { return `null` },
		"empty":                        func(string) string { return `{}` },
		"no transfer_id":               func(id string) string { return swap(validHandoff(id), "transfer_id", "") },
		"foreign transfer_id":          func(id string) string { return swap(validHandoff(id), "transfer_id", `"xfer-someone-else"`) },
		"no remote_engine_id":          func(id string) string { return swap(validHandoff(id), "remote_engine_id", "") },
		"empty remote_engine_id":       func(id string) string { return swap(validHandoff(id), "remote_engine_id", `""`) },
		"no remote_block_ids":          func(id string) string { return swap(validHandoff(id), "remote_block_ids", "") },
		"string block ids":             func(id string) string { return swap(validHandoff(id), "remote_block_ids", `["1","2"]`) },
		"block ids nested too deep":    func(id string) string { return swap(validHandoff(id), "remote_block_ids", `[[[1]]]`) },
		"no remote_host":               func(id string) string { return swap(validHandoff(id), "remote_host", "") },
		"remote_host with whitespace":  func(id string) string { return swap(validHandoff(id), "remote_host", `"10.0.0.1 10.0.0.2"`) },
		"handshake port 0":             func(id string) string { return swap(validHandoff(id), "remote_handshake_port", `0`) },
		"notify port not a number":     func(id string) string { return swap(validHandoff(id), "remote_notify_port", `"notify"`) },
		"no notify port":               func(id string) string { return swap(validHandoff(id), "remote_notify_port", "") },
		"remote_dp_size not a count":   func(id string) string { return swap(validHandoff(id), "remote_dp_size", `"one"`) },
		"tp_size a float":              func(id string) string { return swap(validHandoff(id), "tp_size", `1.5`) },
		"remote_tp_size negative":      func(id string) string { return swap(validHandoff(id), "remote_tp_size", `-2`) },
		"remote_dp_rank an object":     func(id string) string { return swap(validHandoff(id), "remote_dp_rank", `{}`) },
		"remote_dp_size_local a float": func(id string) string { return swap(validHandoff(id), "remote_dp_size_local", `"1.0"`) },
	}
	accept := map[string]func(id string) string{
		"as the engine returns": validHandoff,
		"flat block ids":        func(id string) string { return swap(validHandoff(id), "remote_block_ids", `[4,5,6]`) },
		"a hostname":            func(id string) string { return swap(validHandoff(id), "remote_host", `"prefill-0.rdma"`) },
		"ports as strings": func(id string) string {
			return swap(swap(validHandoff(id), "remote_handshake_port", `"6301"`), "remote_notify_port", `"61005"`)
		},
		"counts as decimal strings": func(id string) string {
			return swap(swap(validHandoff(id), "remote_dp_size", `"1"`), "remote_tp_size", `"8"`)
		},
		"counts null": func(id string) string {
			return swap(swap(validHandoff(id), "tp_size", `null`), "remote_dp_rank", `null`)
		},
		"dp rank 0 and a local DP size": func(id string) string {
			return swap(swap(validHandoff(id), "remote_dp_rank", `0`), "remote_dp_size_local", `1`)
		},
	}
	cases := map[string]func(string) string{}
	for k, v := range reject {
		cases["reject/"+k] = v
	}
	for k, v := range accept {
		cases["accept/"+k] = v
	}
	handoff := func(id, c string) string { return cases[c](id) }
	for _, mode := range []string{"read", "write"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			// An invalid handoff is the prefill's fault and moves its breaker: with 19 of them
			// in a row this one-prefill fleet would be ejected, so the breaker is off here.
			f := startMoRIRecorders(t, mori(map[string]string{"moriio_mode": mode}), mori(labels(decPorts, "moriio_mode", mode)), handoff,
				func(c *config.Config) { c.DisableCircuitBreaker = true })
			failures := 0.0
			for name := range cases {
				body := apiCompletions.body("validate "+name, 3, false)
				body["test_case"] = name
				before := len(f.dec.Requests())
				r := f.g.Post(t, apiCompletions.path, body, nil)
				if strings.HasPrefix(name, "reject/") {
					assertRefused(t, r, http.StatusBadGateway, "moriio_handoff_invalid")
					assert.Len(t, f.dec.Requests(), before, "%s: no decode leg", name)
					failures++
					continue
				}
				require.Equal(t, http.StatusOK, r.Status, "%s: %s", name, r.Body)
				dec := f.dec.Requests()
				require.Len(t, dec, before+1, name)
				pre := f.pre.Requests()
				var leg struct {
					KV json.RawMessage `json:"kv_transfer_params"`
				}
				require.NoError(t, json.Unmarshal(pre[len(pre)-1].Body, &leg))
				var tag struct {
					ID string `json:"transfer_id"`
				}
				require.NoError(t, json.Unmarshal(leg.KV, &tag))
				require.NoError(t, json.Unmarshal(dec[len(dec)-1].Body, &leg))
				assert.Equal(t, cases[name](tag.ID), string(leg.KV), "%s: relayed verbatim", name)
			}
			assert.Len(t, f.pre.Requests(), len(cases), "one prefill leg per request (no retry)")
			m := f.g.Metrics(t)
			assert.Equal(t, failures, m.Sum("smg_pd_kv_transfer_failures_total"), "every invalid handoff counted")
			assert.Equal(t, float64(len(cases)), m.Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))
		})
	}
}
