package grpcfleet_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// dpFleet starts one prefill and one decode simulator of engine reporting the given DP
// sizes, and a --dp-aware gateway (round-robin on both legs) that registers one worker per
// rank; it waits for all of them.
func dpFleet(t *testing.T, engine, connector string, pDP, dDP int) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	m, dir := qwen3(t)
	mk := func(role string, dp int) grpcsim.Config {
		// SGLang's servicer ignores data_parallel_rank; the pin is simulated so the per-rank
		// counters show what the gateway sent.
		return grpcsim.Config{Engine: engine, Role: role, Model: pdModel, TokenizerPath: dir, DPSize: dp,
			KVConnector: connector, EngineID: role + "-engine", SGLangDPRankPin: engine == grpcsim.EngineSGLang}
	}
	s := sims(t, mk(grpcsim.RolePrefill, pDP), mk(grpcsim.RoleDecode, dDP))
	cfg := fleet.DefaultConfig()
	cfg.DPAware = true
	cfg.PrefillPolicy, cfg.DecodePolicy = "round_robin", "round_robin"
	cfg.Prefill = []config.PrefillSpec{{URL: s[0].URL(), BootstrapPort: port(s[0].BootstrapPort())}}
	cfg.Decode = []string{s[1].URL()}
	g := fleet.StartGateway(t, cfg, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
	g.WaitWorkers(t, pDP+dDP)
	return g, s[0], s[1]
}

// assertRanks checks GET /workers: the sim at base is listed once per rank 0..size-1 as
// "{base}@{rank}" with dp_base_url, dp_rank and dp_size, each its own worker id.
func assertRanks(t *testing.T, ws []fleet.WorkerInfo, base, role string, size int) {
	t.Helper()
	ids := map[string]bool{}
	seen := map[int]bool{}
	for _, w := range ws {
		if w.DPBaseURL != base {
			continue
		}
		require.NotNil(t, w.DPRank, "%+v", w)
		require.NotNil(t, w.DPSize, "%+v", w)
		assert.Equal(t, base+"@"+strconv.Itoa(*w.DPRank), w.URL)
		assert.Equal(t, size, *w.DPSize)
		assert.Equal(t, role, w.WorkerType)
		assert.Equal(t, "ready", w.Status)
		seen[*w.DPRank], ids[w.ID] = true, true
	}
	assert.Len(t, seen, size, "one worker per rank of %s", base)
	assert.Len(t, ids, size, "distinct worker ids")
}

// assertSpread checks a simulator's per-rank leg counts: n legs in all, every one of the
// size ranks used (round-robin over the rank workers).
func assertSpread(t *testing.T, got map[string]int64, size int, n int64, what string) {
	t.Helper()
	var sum int64
	for r := 0; r < size; r++ {
		assert.Positive(t, got[strconv.Itoa(r)], "%s: rank %d got no leg (%v)", what, r, got)
		sum += got[strconv.Itoa(r)]
	}
	assert.Equal(t, n, sum, "%s: every leg landed on a rank (%v)", what, got)
	assert.Len(t, got, size, "%s: no rank outside dp_size (%v)", what, got)
}

// Seed "--dp-aware": one worker per DP rank from the reported dp size; SGLang and vLLM legs
// carry data_parallel_rank (the simulators count the pinned ranks and refuse one outside
// dp_size), TokenSpeed places by room residue (the prefill simulator refuses a room whose
// residue is not the prefill rank's), vLLM Mooncake DP>1 names the prefill's KV engine
// "{engine_id}_dp{rank}" (the prefill refuses any other id).
func TestDPAwareRegistersOneWorkerPerRank(t *testing.T) {
	t.Parallel()
	const n = 8
	cases := []struct {
		name, engine, connector string
		pDP, dDP                int
		decodeRanks             bool // the decode simulator counts pinned ranks
	}{
		{"sglang", grpcsim.EngineSGLang, "", 2, 2, true},
		{"tokenspeed", grpcsim.EngineTokenSpeed, "", 4, 1, false},
		// A multi-rank TokenSpeed decode: the engine places the decode leg by the room's
		// residue too, so every rank of the decode gets legs and none is refused.
		{"tokenspeed-dp2-decode", grpcsim.EngineTokenSpeed, "", 2, 2, true},
		{"vllm-nixl", grpcsim.EngineVLLM, grpcsim.ConnectorNixl, 2, 2, true},
		{"vllm-mooncake", grpcsim.EngineVLLM, grpcsim.ConnectorMooncake, 2, 2, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g, p, d := dpFleet(t, tc.engine, tc.connector, tc.pDP, tc.dDP)
			ws := g.Workers(t)
			assertRanks(t, ws, p.URL(), "prefill", tc.pDP)
			assertRanks(t, ws, d.URL(), "decode", tc.dDP)
			for i := 0; i < n; i++ {
				q := "dp request " + strconv.Itoa(i)
				r := g.Post(t, "/v1/completions", map[string]any{"model": pdModel, "prompt": q, "max_tokens": 3}, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				m, _ := qwen3(t)
				ids := m.Tokenizer.Encode(q, false)
				assert.Equal(t, detok(t, grpcsim.HandoffTokens(ids, 3)), r.Object(t)["choices"].([]any)[0].(map[string]any)["text"])
			}
			handoffClean(t, p, d, n)
			ps, ds := p.Stats(), d.Stats()
			assert.Zero(t, ps.Errors+ds.Errors, "no leg refused for its rank, room or engine id")
			assertSpread(t, ps.DPRankRequests, tc.pDP, n, "prefill")
			if tc.decodeRanks {
				assertSpread(t, ds.DPRankRequests, tc.dDP, n, "decode")
			}
		})
	}
}
