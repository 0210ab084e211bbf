package sim_test

import (
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

// TestSGLangLoad1000Pairs fires 1,000 SGLang PD pairs at once (both legs concurrently, random
// rooms in [0, 2^63-1]) at one prefill and one decode and checks every room matched. A load
// test, not a timed assertion; bounded by count and by the hang guard.
func TestSGLangLoad1000Pairs(t *testing.T) {
	if testing.Short() {
		t.Skip("load test skipped under -short")
	}
	const pairs = 1000
	p, d := pair(t, sim.EngineSGLang, func(c *sim.Config) { c.HandoffTimeout = hangGuard })
	var failed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < pairs; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			room := rand.Uint64() & (1<<63 - 1)
			body := sglangBody(p, room, map[string]any{"text": "load pair prompt", "sampling_params": map[string]any{"max_new_tokens": 4}})
			pr, dr := both(p.URL()+"/generate", body, d.URL()+"/generate", body)
			if pr.err != nil || dr.err != nil || pr.status != http.StatusOK || dr.status != http.StatusOK {
				if failed.Add(1) == 1 {
					t.Logf("first failure: prefill %d %v %s / decode %d %v %s", pr.status, pr.err, pr.body, dr.status, dr.err, dr.body)
				}
			}
		}()
	}
	wg.Wait()
	require.Zero(t, failed.Load())
	ps, ds := p.Stats(), d.Stats()
	assert.Zero(t, ps.UnmatchedRooms)
	assert.Zero(t, ds.UnmatchedRooms)
	assert.Zero(t, ps.DuplicateRooms)
	assert.EqualValues(t, pairs, ps.HandoffsSent)
	assert.EqualValues(t, pairs, ds.HandoffsReceived)
	assert.Zero(t, ds.Errors+ps.Errors)
	eventually(t, func() bool { return p.PendingHandoffs() == 0 }, "all rooms released")
	t.Logf("decode max_running_seen=%d prefill max_running_seen=%d", ds.MaxRunningSeen, ps.MaxRunningSeen)
}

// BenchmarkNonStreaming measures non-streaming /v1/completions (16 output tokens) with zero
// latency settings from 16×GOMAXPROCS concurrent clients on loopback. vllm: one decode
// instance answering plain (recompute) requests, reported as req/s. sglang: full PD pairs
// (prefill leg + decode leg + bootstrap side call), reported as pairs/s.
func BenchmarkNonStreaming(b *testing.B) {
	for _, engine := range []string{sim.EngineVLLM, sim.EngineSGLang} {
		b.Run(engine, func(b *testing.B) {
			benchNonStreaming(b, engine)
		})
	}
}

func benchNonStreaming(b *testing.B, engine string) {
	cfg := cfgOf(engine, sim.RoleDecode)
	s := start(b, cfg)
	path, body := "/v1/completions", []byte(`{"model":"sim-model","prompt":"benchmark prompt with a few words","max_tokens":16}`)
	var p *sim.Server
	unit := "req/s"
	if engine == sim.EngineSGLang { // a SGLang decode needs its prefill peer
		p, unit = start(b, cfgOf(engine, sim.RolePrefill)), "pairs/s"
	}
	var room atomic.Uint64
	b.SetParallelism(16)
	b.ResetTimer()
	t0 := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if p == nil {
				r := post(s.URL()+path, body)
				if r.status != http.StatusOK {
					b.Errorf("status %d: %s", r.status, r.body)
					return
				}
				continue
			}
			rb := sglangBody(p, room.Add(1), map[string]any{"prompt": "benchmark prompt with a few words", "max_tokens": 16})
			pr, dr := both(p.URL()+path, rb, s.URL()+path, rb)
			if pr.status != http.StatusOK || dr.status != http.StatusOK {
				b.Errorf("status %d/%d", pr.status, dr.status)
				return
			}
		}
	})
	el := time.Since(t0)
	b.ReportMetric(float64(b.N)/el.Seconds(), unit)
}
