package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

func moriio(mode string) func(*sim.Config) {
	return func(c *sim.Config) {
		c.Engine, c.KVConnector, c.MoRIIOMode = sim.EngineVLLM, sim.ConnectorMoRIIO, mode
	}
}

const moriPrompt = "a mori prompt of seven words here"

// prefillTag is the tag the gateway puts on a MoRI-IO prefill leg; WRITE names d's side
// channel.
func prefillTag(id string, d *sim.Server) map[string]any {
	t := map[string]any{"do_remote_decode": true, "do_remote_prefill": false, "transfer_id": id, "remote_dp_size": 1}
	if d != nil {
		hs, nt := d.MoRIIOPorts()
		t["remote_host"], t["remote_handshake_port"], t["remote_notify_port"] = "127.0.0.1", hs, nt
	}
	return t
}

func prefillLeg(tag map[string]any, extra map[string]any) map[string]any {
	b := map[string]any{"model": "sim-model", "prompt": moriPrompt, "max_tokens": 1, "ignore_eos": true, "kv_transfer_params": tag}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

func decodeLeg(params any) map[string]any {
	return map[string]any{"model": "sim-model", "prompt": moriPrompt, "max_tokens": 4, "kv_transfer_params": params}
}

func completionText(t *testing.T, r result) string {
	t.Helper()
	require.Equal(t, 200, r.status, "%s", r.body)
	return r.json(t)["choices"].([]any)[0].(map[string]any)["text"].(string)
}

func TestMoRIIOReadHandsOffTheKV(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM, moriio(sim.MoRIIOModeRead))
	pr := post(p.URL()+"/v1/completions", prefillLeg(prefillTag("xfer-1", nil), nil))
	require.Equal(t, 200, pr.status, "%s", pr.body)
	kv := pr.json(t)["kv_transfer_params"].(map[string]any)
	hs, nt := p.MoRIIOPorts()
	assert.Equal(t, "xfer-1", kv["transfer_id"])
	assert.Equal(t, p.EngineID(), kv["remote_engine_id"])
	assert.Equal(t, "127.0.0.1", kv["remote_host"])
	assert.Equal(t, float64(hs), kv["remote_handshake_port"])
	assert.Equal(t, float64(nt), kv["remote_notify_port"])
	assert.NotEmpty(t, kv["remote_block_ids"])
	kv["do_remote_prefill"], kv["do_remote_decode"] = true, false
	assert.Equal(t, sim.HandoffText(moriPrompt, 4), completionText(t, post(d.URL()+"/v1/completions", decodeLeg(kv))))
	assert.Equal(t, int64(1), p.Stats().HandoffsSent)
	assert.Equal(t, int64(1), d.Stats().HandoffsReceived)
	assert.Zero(t, d.Stats().RecomputedPrompts)
	assert.Zero(t, p.PendingHandoffs())

	// The same handoff twice: the blocks were consumed, the decode reads garbage.
	assert.Equal(t, sim.WrongText(moriPrompt, 4), completionText(t, post(d.URL()+"/v1/completions", decodeLeg(kv))))
	assert.Equal(t, int64(1), d.Stats().HandoffsReceived)
}

func TestMoRIIOPrefillReturnsTheHandoffOnlyAtItsCap(t *testing.T) {
	t.Parallel()
	p := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, moriio(sim.MoRIIOModeRead)))
	for name, extra := range map[string]map[string]any{
		"eos may end it":      {"ignore_eos": false},
		"stop":                {"stop": []string{"x"}},
		"stop_token_ids":      {"stop_token_ids": []int{2}},
		"cap above one token": {"max_tokens": 2},
	} {
		r := post(p.URL()+"/v1/completions", prefillLeg(prefillTag("xfer-"+name, nil), extra))
		require.Equal(t, 200, r.status, "%s: %s", name, r.body)
		assert.Nil(t, r.json(t)["kv_transfer_params"], name)
	}
	assert.Zero(t, p.PendingHandoffs())
}

func TestMoRIIOReadDecodeWithoutHandoffAnswersWrongText(t *testing.T) {
	t.Parallel()
	d := start(t, cfgOf(sim.EngineVLLM, sim.RoleDecode, moriio(sim.MoRIIOModeRead)))
	assert.Equal(t, sim.WrongText(moriPrompt, 4), completionText(t, post(d.URL()+"/v1/completions", decodeLeg(nil))))
	assert.NotEqual(t, sim.WrongText(moriPrompt, 4), sim.HandoffText(moriPrompt, 4))
	assert.NotEqual(t, sim.WrongText(moriPrompt, 4), sim.RecomputeText(moriPrompt, 4))
	assert.Zero(t, d.Stats().RecomputedPrompts, "a MoRI-IO decode never recomputes")
}

func TestMoRIIOWriteSequentialAndConcurrent(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM, moriio(sim.MoRIIOModeWrite))
	// Sequential: the prefill pushes once the decode carrying its handoff allocated blocks.
	pr := post(p.URL()+"/v1/completions", prefillLeg(prefillTag("xfer-seq", d), nil))
	require.Equal(t, 200, pr.status, "%s", pr.body)
	kv := pr.json(t)["kv_transfer_params"].(map[string]any)
	assert.Equal(t, "xfer-seq", kv["transfer_id"])
	assert.Equal(t, sim.HandoffText(moriPrompt, 4), completionText(t, post(d.URL()+"/v1/completions", decodeLeg(kv))))

	// Concurrent: the decode carries params minted from the prefill's side channel.
	hs, nt := p.MoRIIOPorts()
	minted := map[string]any{"do_remote_decode": false, "do_remote_prefill": true, "transfer_id": "xfer-conc",
		"remote_dp_size": 1, "remote_host": "127.0.0.1", "remote_handshake_port": hs, "remote_notify_port": nt}
	pr2, dr := both(p.URL()+"/v1/completions", prefillLeg(prefillTag("xfer-conc", d), nil), d.URL()+"/v1/completions", decodeLeg(minted))
	require.Equal(t, 200, pr2.status, "%s", pr2.body)
	assert.Equal(t, sim.HandoffText(moriPrompt, 4), completionText(t, dr))
	eventually(t, func() bool { return p.Stats().HandoffsSent == 2 }, "both pushes done")
	assert.Equal(t, int64(2), d.Stats().HandoffsReceived)
	assert.Zero(t, d.Stats().LeakedBlocks)
	assert.Zero(t, p.Stats().UnmatchedRooms+d.Stats().UnmatchedRooms)

	// Minted params naming the wrong notify port fail the handshake.
	minted["transfer_id"], minted["remote_notify_port"] = "xfer-bad", nt+1
	r := post(d.URL()+"/v1/completions", decodeLeg(minted))
	assert.Equal(t, 500, r.status, "%s", r.body)
}

func TestMoRIIOWriteDecodeAbortedBeforeWriteDoneLeaksItsBlocks(t *testing.T) {
	t.Parallel()
	p, d := pair(t, sim.EngineVLLM, moriio(sim.MoRIIOModeWrite))
	hs, nt := p.MoRIIOPorts()
	minted := map[string]any{"do_remote_prefill": true, "transfer_id": "xfer-never", "remote_host": "127.0.0.1",
		"remote_handshake_port": hs, "remote_notify_port": nt}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r := do(ctx, "POST", d.URL()+"/v1/completions", decodeLeg(minted))
	require.Error(t, r.err, "the decode waits for a push that never comes")
	eventually(t, func() bool { return d.Stats().Aborted == 1 }, "decode aborted")
	assert.Equal(t, int64(1), d.Stats().LeakedBlocks, "one block for a seven-word prompt")

	// Without any handoff a WRITE decode hangs too (no blocks to leak).
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	r = do(ctx2, "POST", d.URL()+"/v1/completions", decodeLeg(nil))
	require.Error(t, r.err)
	eventually(t, func() bool { return d.Stats().Aborted == 2 }, "second decode aborted")
	assert.Equal(t, int64(1), d.Stats().LeakedBlocks)
	assert.Zero(t, d.Stats().RecomputedPrompts)
}

func TestMoRIIOHandoffFaults(t *testing.T) {
	t.Parallel()
	p := start(t, cfgOf(sim.EngineVLLM, sim.RolePrefill, moriio(sim.MoRIIOModeRead)))
	hs, nt := p.MoRIIOPorts()
	kvOf := func(fault string) map[string]any {
		r := post(p.URL()+"/v1/completions", prefillLeg(prefillTag("xfer-"+fault, nil), map[string]any{"sim_fault": "prefill:" + fault}))
		require.Equal(t, 200, r.status, "%s", r.body)
		return r.json(t)["kv_transfer_params"].(map[string]any)
	}
	m := kvOf(sim.FaultHandoffMissingField)
	assert.NotContains(t, m, "remote_block_ids")
	assert.Equal(t, "xfer-"+sim.FaultHandoffMissingField, m["transfer_id"])
	w := kvOf(sim.FaultHandoffWrongTransferID)
	assert.Equal(t, "xfer-"+sim.FaultHandoffWrongTransferID+"-foreign", w["transfer_id"])
	ports := kvOf(sim.FaultHandoffWrongPorts)
	assert.Equal(t, float64(hs+1), ports["remote_handshake_port"])
	assert.Equal(t, float64(nt+1), ports["remote_notify_port"])
	_, err := sim.ParseFault("handoff-wrong-ports:1")
	assert.Error(t, err)
}
