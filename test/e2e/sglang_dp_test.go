package e2e_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Seed "--dp-aware" on HTTP SGLang (smg-spec.md §2.5.3, §3.2 steps 5-6): a prefill and a
// decode reporting dp_size 2 and 3 in /server_info are registered as "{url}@{rank}"; the
// prefill leg carries routed_dp_rank (the prefill worker's rank), the decode leg its own
// routed_dp_rank and disagg_prefill_dp_rank. The simulators refuse a leg without a rank of
// theirs, the decode a disagg_prefill_dp_rank that is not the rank the prefill leg got
// (handed over with the KV), and count the legs per rank; round-robin uses every rank.
func TestSGLangDPAwareLegsCarryTheRanks(t *testing.T) {
	t.Parallel()
	mk := func(role string, dp int) *sim.Server {
		return fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: role, DPSize: dp})
	}
	// Sizes 2 and 3: round-robin pairs prefill and decode ranks that differ.
	p, d := mk(sim.RolePrefill, 2), mk(sim.RoleDecode, 3)
	cfg := fleet.DefaultConfig()
	cfg.DPAware = true
	cfg.PrefillPolicy, cfg.DecodePolicy = "round_robin", "round_robin"
	bp := p.BootstrapPort()
	cfg.Prefill = []config.PrefillSpec{{URL: p.URL(), BootstrapPort: &bp}}
	cfg.Decode = []string{d.URL()}
	g := fleet.StartGateway(t, cfg)
	g.WaitWorkers(t, 5)
	for _, w := range g.Workers(t) {
		require.NotNil(t, w.DPRank, "%+v", w)
		assert.Equal(t, w.DPBaseURL+"@"+strconv.Itoa(*w.DPRank), w.URL)
		want := map[string]int{"prefill": 2, "decode": 3}[w.WorkerType]
		assert.Equal(t, want, *w.DPSize)
	}
	const prompt, maxTokens = "a data parallel prompt", 4
	sent := int64(0)
	for i := 0; i < 4; i++ {
		for _, stream := range []bool{false, true} {
			want := sim.HandoffText(apiChat.simPrompt(prompt), maxTokens)
			if stream {
				r := g.Stream(t, apiChat.path, apiChat.body(prompt, maxTokens, true))
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				assert.Empty(t, r.Errors(), "%s", r.Body)
				assert.Equal(t, want, apiChat.streamText(t, r.Events))
			} else {
				r := g.Post(t, apiChat.path, apiChat.body(prompt, maxTokens, false), nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				assert.Equal(t, want, apiChat.text(t, r.Object(t)))
			}
			sent++
		}
	}
	waitIdle(t, p, d)
	ps, ds := p.Stats(), d.Stats()
	assert.Equal(t, sent, ds.HandoffsReceived, "every KV arrived")
	assert.Zero(t, ps.Errors+ds.Errors+ds.RecomputedPrompts+ps.UnmatchedRooms+ds.UnmatchedRooms)
	for _, c := range []struct {
		st   sim.Stats
		size int
	}{{ps, 2}, {ds, 3}} {
		assert.Len(t, c.st.DPRankRequests, c.size, "every rank used: %v", c.st.DPRankRequests)
		sum := int64(0)
		for _, v := range c.st.DPRankRequests {
			sum += v
		}
		assert.Equal(t, sent, sum, "every leg carried a rank: %v", c.st.DPRankRequests)
	}
}
