package sim_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

func mooncakeCfg(c *sim.Config) { c.KVConnector = sim.ConnectorMooncake }

func mooncakeLegs(p *sim.Server, id, prompt string) (prefill, decode map[string]any) {
	prefill = map[string]any{"prompt": prompt, "max_tokens": 1, "stream": false,
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "transfer_id": id}}
	decode = map[string]any{"prompt": prompt, "max_tokens": 5,
		"kv_transfer_params": map[string]any{"do_remote_decode": false, "do_remote_prefill": true, "transfer_id": id,
			"remote_engine_id": p.EngineID(), "remote_bootstrap_addr": "http://127.0.0.1:" + strconv.Itoa(p.BootstrapPort())}}
	return prefill, decode
}

func TestMooncakeHandoff(t *testing.T) {
	t.Parallel()
	const prompt = "mooncake pushes kv"
	t.Run("matched, concurrent legs", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM, mooncakeCfg)
		require.NotZero(t, p.BootstrapPort())
		assert.Zero(t, d.BootstrapPort())
		pb, db := mooncakeLegs(p, "xfer-1", prompt)
		pr, dr := both(p.URL()+"/v1/completions", pb, d.URL()+"/v1/completions", db)
		pc := parseCompl(t, pr)
		assert.Nil(t, pc.KV, "Mooncake prefill returns no params")
		assert.Equal(t, sim.HandoffText(prompt, 5), parseCompl(t, dr).Choices[0].Text)
		assert.EqualValues(t, 1, d.Stats().HandoffsReceived)
		eventually(t, func() bool { return p.Stats().HandoffsSent == 1 }, "prefill counts the fetch")
		eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "transfer released")
	})
	t.Run("decode first, prefill falls back to X-Request-Id", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM, mooncakeCfg)
		pb, db := mooncakeLegs(p, "req-77", prompt)
		delete(pb["kv_transfer_params"].(map[string]any), "transfer_id")
		done := make(chan result, 1)
		go func() { done <- post(d.URL()+"/v1/completions", db) }()
		eventually(t, func() bool { return p.PendingHandoffs() == 1 }, "decode waiting")
		assert.Equal(t, http.StatusOK, post(p.URL()+"/v1/completions", pb, "X-Request-Id", "req-77").status)
		assert.Equal(t, sim.HandoffText(prompt, 5), parseCompl(t, <-done).Choices[0].Text)
	})
	t.Run("wrong engine id", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM, mooncakeCfg, shortTimeout)
		pb, db := mooncakeLegs(p, "xfer-2", prompt)
		db["kv_transfer_params"].(map[string]any)["remote_engine_id"] = "someone-else"
		pr, dr := both(p.URL()+"/v1/completions", pb, d.URL()+"/v1/completions", db)
		assert.Equal(t, http.StatusOK, pr.status)
		assert.Equal(t, http.StatusInternalServerError, dr.status)
		assert.Contains(t, errMessage(t, dr), `remote_engine_id "someone-else" is not this engine`)
		eventually(t, func() bool { return p.Stats().UnmatchedRooms == 1 }, "unfetched transfer expires")
	})
	t.Run("wrong transfer id times out on both sides", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM, mooncakeCfg, shortTimeout)
		pb, _ := mooncakeLegs(p, "xfer-3", prompt)
		_, db := mooncakeLegs(p, "xfer-4", prompt)
		_, dr := both(p.URL()+"/v1/completions", pb, d.URL()+"/v1/completions", db)
		assert.Equal(t, http.StatusInternalServerError, dr.status)
		assert.Contains(t, errMessage(t, dr), "within 0.3s")
		assert.EqualValues(t, 1, d.Stats().UnmatchedRooms)
		eventually(t, func() bool { return p.Stats().UnmatchedRooms == 1 }, "prefill lease expiry")
		eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "released")
	})
	t.Run("incomplete decode params recompute", func(t *testing.T) {
		t.Parallel()
		p, d := pair(t, sim.EngineVLLM, mooncakeCfg)
		_, db := mooncakeLegs(p, "xfer-5", prompt)
		delete(db["kv_transfer_params"].(map[string]any), "remote_bootstrap_addr")
		dr := post(d.URL()+"/v1/completions", db)
		assert.Equal(t, sim.RecomputeText(prompt, 5), parseCompl(t, dr).Choices[0].Text)
		assert.EqualValues(t, 1, d.Stats().RecomputedPrompts)
	})
	t.Run("duplicate transfer id", func(t *testing.T) {
		t.Parallel()
		p := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, mooncakeCfg))
		pb, _ := mooncakeLegs(p, "xfer-6", prompt)
		assert.Equal(t, http.StatusOK, post(p.URL()+"/v1/completions", pb).status)
		dup := post(p.URL()+"/v1/completions", pb)
		assert.Equal(t, http.StatusBadRequest, dup.status)
		assert.Contains(t, errMessage(t, dup), `Duplicate transfer_id "xfer-6"`)
		assert.EqualValues(t, 1, p.Stats().DuplicateRooms)
	})
}
