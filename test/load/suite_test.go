package load_test

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim"
)

func TestDefaultScenariosCoverTheIssue(t *testing.T) {
	t.Parallel()
	names := map[string]bool{}
	for _, s := range load.DefaultScenarios() {
		assert.False(t, names[s.Name()], "duplicate %s", s.Name())
		names[s.Name()] = true
	}
	for _, want := range []string{
		"sglang zero-latency non-streaming c=4", "sglang zero-latency non-streaming c=32",
		"sglang zero-latency streaming c=4", "sglang zero-latency streaming c=32",
		"vllm-nixl zero-latency non-streaming c=4", "vllm-nixl zero-latency streaming c=32",
		"sglang realistic-latency non-streaming c=32", "vllm-nixl realistic-latency streaming c=32",
	} {
		assert.True(t, names[want], want)
	}
	assert.Len(t, names, 12)
}

func TestRealisticSimArgs(t *testing.T) {
	t.Parallel()
	p, d := load.RealisticSimArgs(true)
	assert.Equal(t, []string{"--prefill-tokens-per-s", "800"}, p, "16 prompt words in 20 ms")
	assert.Equal(t, []string{"--itl-ms", "5"}, d)
	p, d = load.RealisticSimArgs(false)
	assert.Nil(t, p)
	assert.Nil(t, d)
}

func cmp(s load.Scenario, addedP50, thr, p50, p99, ttft99 float64) load.ScenarioResult {
	ms := func(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }
	direct := load.Summary{Throughput: 1000, Latency: load.Percentiles{P50: ms(10), P99: ms(20)}, TTFT: load.Percentiles{P99: ms(5)}}
	gw := load.Summary{Throughput: 1000 * thr, Latency: load.Percentiles{P50: ms(10 * p50), P99: ms(20 * p99)},
		TTFT: load.Percentiles{P99: ms(5 + ttft99)}}
	if addedP50 != 0 {
		gw.Latency.P50 = ms(10 + addedP50)
	}
	return load.ScenarioResult{Scenario: s, Comparison: load.Comparison{Stream: s.Stream, Pairs: []load.Pair{{A: gw, B: direct}}}}
}

func TestEvaluateTargets(t *testing.T) {
	t.Parallel()
	sg := sim.EngineSGLang
	r := load.SuiteResult{Scenarios: []load.ScenarioResult{
		cmp(load.Scenario{Engine: sg, Concurrency: 4}, 0.3, 1, 1, 1, 0),
		cmp(load.Scenario{Engine: sg, Concurrency: 32}, 0, 0.7, 1, 1, 0),
		cmp(load.Scenario{Engine: sg, Concurrency: 4, Stream: true}, 0, 1, 1, 1, 0.5),
		cmp(load.Scenario{Engine: sg, Concurrency: 32, Stream: true}, 0, 1, 1, 1, 9), // not judged
		cmp(load.Scenario{Engine: sg, Concurrency: 32, Realistic: true}, 0, 1, 1.04, 1.2, 0),
	}}
	ts := load.EvaluateTargets(r)
	require.Len(t, ts, 6)
	want := []string{"MET", "MISSED", "MET", "MISSED", "MET", "not run"}
	for i, tr := range ts {
		assert.Equal(t, want[i], tr.Status(), tr.Goal)
	}
	assert.Equal(t, []string{"sglang non-streaming c=4: +0.300 ms"}, ts[0].Values)
	assert.Equal(t, []string{"sglang streaming c=4: +0.500 ms"}, ts[4].Values)

	r.Streams = &load.HoldResult{Requested: 10000, Opened: 9000, StillOpen: 9000}
	ts = load.EvaluateTargets(r)
	assert.Equal(t, "MISSED", ts[5].Status(), "9,000 of 10,000 requested")
	r.Streams = &load.HoldResult{Requested: 9850, Opened: 9850, StillOpen: 9850}
	r.StreamsLimit = 20000
	ts = load.EvaluateTargets(r)
	assert.Equal(t, "CAPPED", ts[5].Status(), "all 9,850 the open-file limit allows")
	r.Streams = &load.HoldResult{Requested: 10000, Opened: 10000, StillOpen: 10000}
	assert.Equal(t, "MET", load.EvaluateTargets(r)[5].Status())
	var out bytes.Buffer
	load.WriteTargets(&out, ts)
	assert.Regexp(t, `MISSED +zero-latency sims, c=32: gateway throughput ≥ 0.75× direct +sglang non-streaming c=32: 0.700×`, out.String())
}

// TestSuiteWithBinaries builds smg and smg-sim and runs one short scenario per engine
// through real processes, plus a small open-streams run.
func TestSuiteWithBinaries(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binaries")
	}
	t.Parallel()
	bin := t.TempDir()
	for _, pkg := range []string{"smg", "smg-sim"} {
		out, err := exec.Command("go", "build", "-o", filepath.Join(bin, pkg), "github.com/smg-go/smg/cmd/"+pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := load.RunSuite(ctx, load.SuiteConfig{BinDir: bin, Pairs: 1, Phase: 5 * time.Second,
		RealisticPhase: 5 * time.Second, Warmup: time.Second, PhaseRequests: 20,
		Only: regexp.MustCompile(`zero-latency streaming c=4`), Streams: 30, StreamsTimeout: time.Minute, Out: &out})
	require.NoError(t, err, out.String())
	require.Len(t, res.Scenarios, 2, out.String())
	for _, s := range res.Scenarios {
		assert.Equal(t, 20, s.Comparison.Pairs[0].A.OK, s.Scenario.Name())
		assert.Equal(t, 20, s.Comparison.Pairs[0].B.OK, s.Scenario.Name())
	}
	require.NotNil(t, res.Streams)
	assert.Equal(t, 30, res.Streams.StillOpen)
	// 2 modes × (2 warm-up + 20 measured) requests per fleet.
	assert.Contains(t, out.String(), "fleet check: 44 decode requests, every one received its KV through a handoff")
	assert.Contains(t, out.String(), "per open stream: RSS")
}
