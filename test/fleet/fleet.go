package fleet

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim"
)

// Via is how a fleet's workers reach the gateway.
type Via uint8

const (
	// ViaDefault is ViaFlags for SGLang and ViaAPI for vLLM (whose connector only POST
	// /workers can set).
	ViaDefault Via = iota
	// ViaFlags lists the workers as startup workers, like `--prefill <url> <bootstrap_port>`
	// and `--decode <url>` (cfg.Prefill, cfg.Decode); the runtime is detected.
	ViaFlags
	// ViaAPI registers each worker with POST /workers and the body WorkerSpec returns.
	ViaAPI
)

// Spec describes a fleet: Prefills prefill and Decodes decode simulators of one engine,
// behind one gateway.
type Spec struct {
	// Engine is sim.EngineSGLang or sim.EngineVLLM.
	Engine string
	// Connector is the vLLM connector, sim.ConnectorNixl (default) or sim.ConnectorMooncake.
	Connector string
	// Prefills and Decodes are the instance counts (each at least 1 unless the suite
	// registers its own workers).
	Prefills, Decodes int
	// Via selects startup flags or POST /workers (ViaDefault: see Via).
	Via Via
	// Gateway, when set, edits the gateway config (DefaultConfig) before start.
	Gateway func(*config.Config)
	// Sim, when set, edits each simulator's config before start; role is sim.RolePrefill or
	// sim.RoleDecode and i the instance index within its role.
	Sim func(role string, i int, c *sim.Config)
	// Options are extra fx options for the gateway (e.g. fx.Decorate of the tracer provider).
	Options []fx.Option
}

// Fleet is a running gateway and its simulators.
type Fleet struct {
	Gateway  *Gateway
	Prefills []*sim.Server
	Decodes  []*sim.Server
}

// Start starts the simulators, then the gateway with them registered as spec.Via says, and
// waits (ReadyTimeout) until every worker is healthy and /readiness is 200. Everything is
// stopped at cleanup, gateway first.
func Start(t testing.TB, spec Spec) *Fleet {
	t.Helper()
	f := &Fleet{}
	for i := 0; i < spec.Prefills; i++ {
		f.Prefills = append(f.Prefills, StartSim(t, simConfig(spec, sim.RolePrefill, i)))
	}
	for i := 0; i < spec.Decodes; i++ {
		f.Decodes = append(f.Decodes, StartSim(t, simConfig(spec, sim.RoleDecode, i)))
	}
	cfg := DefaultConfig()
	via := spec.Via
	if via == ViaDefault {
		via = ViaFlags
		if spec.Engine == sim.EngineVLLM {
			via = ViaAPI
		}
	}
	if via == ViaFlags {
		for _, p := range f.Prefills {
			ps := config.PrefillSpec{URL: p.URL()}
			if bp := p.BootstrapPort(); bp != 0 {
				ps.BootstrapPort = &bp
			}
			cfg.Prefill = append(cfg.Prefill, ps)
		}
		for _, d := range f.Decodes {
			cfg.Decode = append(cfg.Decode, d.URL())
		}
	}
	if spec.Gateway != nil {
		spec.Gateway(&cfg)
	}
	f.Gateway = StartGateway(t, cfg, spec.Options...)
	if via == ViaAPI {
		for _, s := range f.Sims() {
			f.Gateway.Register(t, WorkerSpec(s))
		}
	}
	f.Gateway.WaitWorkers(t, len(f.Prefills)+len(f.Decodes))
	return f
}

func simConfig(spec Spec, role string, i int) sim.Config {
	c := sim.Config{Engine: spec.Engine, Role: role, Host: "127.0.0.1"}
	if spec.Engine == sim.EngineVLLM {
		c.KVConnector = spec.Connector
	}
	if spec.Sim != nil {
		spec.Sim(role, i, &c)
	}
	return c
}

// StartSim starts one simulator on 127.0.0.1 (when cfg.Host is empty) and closes it at
// cleanup.
func StartSim(t testing.TB, cfg sim.Config) *sim.Server {
	t.Helper()
	if cfg.Host == "" {
		cfg.Host = "127.0.0.1"
	}
	s, err := sim.Start(cfg)
	require.NoError(t, err, "start sim %s %s", cfg.Engine, cfg.Role)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Sims returns the prefills then the decodes.
func (f *Fleet) Sims() []*sim.Server {
	return append(append([]*sim.Server(nil), f.Prefills...), f.Decodes...)
}

// Reset zeroes the counters of every simulator of the fleet.
func (f *Fleet) Reset() {
	for _, s := range f.Sims() {
		s.Reset()
	}
}

// WorkerSpec is the POST /workers body that registers s the way the seed documents: url,
// worker_type and runtime_type; a SGLang prefill adds its bootstrap_port; a vLLM instance
// adds kv_connector (NixlConnector or MooncakeConnector), and a Mooncake prefill also its
// bootstrap_port and kv_engine_id (seed "Where the Connector Comes From").
func WorkerSpec(s *sim.Server) map[string]any {
	c := s.Config()
	body := map[string]any{"url": s.URL(), "worker_type": c.Role, "runtime_type": c.Engine}
	switch {
	case c.Engine == sim.EngineSGLang && c.Role == sim.RolePrefill:
		body["bootstrap_port"] = s.BootstrapPort()
	case c.Engine == sim.EngineVLLM && c.KVConnector == sim.ConnectorMooncake:
		body["kv_connector"] = wire.ConnectorMooncake
		if c.Role == sim.RolePrefill {
			body["bootstrap_port"] = s.BootstrapPort()
			body["kv_engine_id"] = s.EngineID()
		}
	case c.Engine == sim.EngineVLLM:
		body["kv_connector"] = wire.ConnectorNixl
	}
	return body
}

// SumStats adds the counters of ss (MaxRunningSeen is the maximum).
func SumStats(ss ...*sim.Server) sim.Stats {
	var t sim.Stats
	for _, s := range ss {
		st := s.Stats()
		t.Requests += st.Requests
		t.HandoffsSent += st.HandoffsSent
		t.HandoffsReceived += st.HandoffsReceived
		t.RecomputedPrompts += st.RecomputedPrompts
		t.UnmatchedRooms += st.UnmatchedRooms
		t.DuplicateRooms += st.DuplicateRooms
		t.Aborted += st.Aborted
		t.Running += st.Running
		t.MaxRunningSeen = max(t.MaxRunningSeen, st.MaxRunningSeen)
		t.Errors += st.Errors
		t.Waiting += st.Waiting
		t.PromptTokens += st.PromptTokens
		t.GenerationTokens += st.GenerationTokens
		t.LeakedBlocks += st.LeakedBlocks
		t.CachedTokens += st.CachedTokens
		t.EvictedBlocks += st.EvictedBlocks
		t.KVCacheBlocksUsed += st.KVCacheBlocksUsed
		t.QueueMS += st.QueueMS
		t.BusyMS += st.BusyMS
	}
	return t
}
