package grpcfleet_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// registered registers each sim (role from its config) and returns the detected workers.
func registered(t *testing.T, servers ...*grpcsim.Server) []worker.Worker {
	t.Helper()
	pool := grpcengine.New(grpcengine.Options{})
	svc := registry.New(memory.NewWorkers(), fleet.DefaultConfig(), nil, slog.New(slog.DiscardHandler)).WithGRPC(pool)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = svc.Close(ctx)
		_ = pool.Close()
	})
	out := make([]worker.Worker, len(servers))
	for i, s := range servers {
		acc, err := svc.Register(context.Background(), registry.Spec{URL: s.URL(), WorkerType: s.Config().Role})
		require.NoError(t, err)
		require.Eventually(t, func() bool {
			l, err := svc.Get(acc.WorkerID)
			if err == nil && l.Healthy() {
				out[i] = l.Worker
				return true
			}
			return false
		}, fleet.ReadyTimeout, 10*time.Millisecond)
	}
	return out
}

// Pairing modes over facts the gRPC servicers reported (seed "Pairing Modes").
func TestPairingModesOverReportedFacts(t *testing.T) {
	t.Parallel()
	cfg := func(engine, role, dtype, protocol string) grpcsim.Config {
		return grpcsim.Config{Engine: engine, Role: role, KVCacheDtype: dtype, PairingProtocol: protocol}
	}
	ws := registered(t, sims(t,
		cfg(grpcsim.EngineSGLang, grpcsim.RolePrefill, "auto", ""),      // 0
		cfg(grpcsim.EngineSGLang, grpcsim.RoleDecode, "auto", ""),       // 1
		cfg(grpcsim.EngineSGLang, grpcsim.RoleDecode, "fp8_e5m2", ""),   // 2
		cfg(grpcsim.EngineTokenSpeed, grpcsim.RoleDecode, "auto", ""),   // 3
		cfg(grpcsim.EngineSGLang, grpcsim.RolePrefill, "auto", "kv-v1"), // 4
		cfg(grpcsim.EngineSGLang, grpcsim.RoleDecode, "fp8_e5m2", "kv-v1"),
	)...)
	ok := func(p, d int, m pairing.Mode) bool {
		yes, _ := pairing.Compatible(pairing.Describe(ws[p]), pairing.Describe(ws[d]), m)
		return yes
	}
	assert.True(t, ok(0, 1, pairing.ModeStrict), "same runtime, transport, layout and version")
	assert.False(t, ok(0, 2, pairing.ModeLenient), "kv_cache_dtype differs")
	assert.True(t, ok(0, 2, pairing.ModeOff), "off pairs everything of one runtime")
	assert.False(t, ok(0, 3, pairing.ModeOff), "gRPC keeps both legs on one runtime, even under off")
	_, diffs := pairing.Compatible(pairing.Describe(ws[0]), pairing.Describe(ws[3]), pairing.ModeLenient)
	assert.Equal(t, []string{"runtime"}, diffs)
	assert.True(t, ok(4, 5, pairing.ModeStrict), "equal SMG_PAIRING_PROTOCOL: the layout is not compared")
	assert.False(t, ok(4, 1, pairing.ModeStrict), "only one leg has a protocol: strict refuses")
	assert.True(t, ok(4, 1, pairing.ModeLenient), "lenient falls back to the derived facts")
}
