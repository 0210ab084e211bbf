package e2e_test

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// moriFleet is one MoRI-IO prefill and decode simulator behind a gateway.
type moriFleet struct {
	g    *fleet.Gateway
	p, d *sim.Server
}

// moriSpec is the POST /workers body of a MoRI-IO simulator: the seed's fields plus the
// side-channel ports it really listens on (free ports on loopback) and extra labels.
func moriSpec(s *sim.Server, extra map[string]string) map[string]any {
	c := s.Config()
	hs, nt := s.MoRIIOPorts()
	labels := map[string]string{"moriio_mode": c.MoRIIOMode,
		"moriio_handshake_port": strconv.Itoa(hs), "moriio_notify_port": strconv.Itoa(nt)}
	for k, v := range extra {
		labels[k] = v
	}
	return map[string]any{"url": s.URL(), "worker_type": c.Role, "runtime_type": "vllm",
		"kv_connector": "MoRIIOConnector", "labels": labels}
}

// startMoRI starts a MoRI-IO pair in mode; concurrent labels the decode
// moriio_write_dispatch: concurrent. gw edits the gateway config, simCfg each sim's.
func startMoRI(t *testing.T, mode string, concurrent bool, gw func(*config.Config), simCfg func(*sim.Config)) *moriFleet {
	t.Helper()
	mk := func(role string) *sim.Server {
		c := sim.Config{Engine: sim.EngineVLLM, Role: role, KVConnector: sim.ConnectorMoRIIO, MoRIIOMode: mode}
		if simCfg != nil {
			simCfg(&c)
		}
		return fleet.StartSim(t, c)
	}
	f := &moriFleet{p: mk(sim.RolePrefill), d: mk(sim.RoleDecode)}
	cfg := fleet.DefaultConfig()
	if gw != nil {
		gw(&cfg)
	}
	f.g = fleet.StartGateway(t, cfg)
	f.g.Register(t, moriSpec(f.p, nil))
	var extra map[string]string
	if concurrent {
		extra = map[string]string{"moriio_write_dispatch": "concurrent"}
	}
	f.g.Register(t, moriSpec(f.d, extra))
	f.g.WaitWorkers(t, 2)
	return f
}

var moriAPIs = []api{apiChat, apiCompletions}

// runHandoffs sends every MoRI-IO route, streaming and not, and checks each answer is the
// text of a real handoff. It returns how many requests it sent.
func runHandoffs(t *testing.T, g *fleet.Gateway, prompt string) int64 {
	t.Helper()
	const maxTokens = 4
	sent := int64(0)
	for _, a := range moriAPIs {
		for _, stream := range []bool{false, true} {
			want := sim.HandoffText(a.simPrompt(prompt), maxTokens)
			if !stream {
				r := g.Post(t, a.path, a.body(prompt, maxTokens, false), nil)
				require.Equal(t, http.StatusOK, r.Status, "%s %s", a.name, r.Body)
				assert.Equal(t, want, a.text(t, r.Object(t)), "%s: decode text after a real handoff", a.name)
			} else {
				r := g.Stream(t, a.path, a.body(prompt, maxTokens, true))
				require.Equal(t, http.StatusOK, r.Status, "%s %s", a.name, r.Body)
				assert.Empty(t, r.Errors(), "%s", r.Body)
				require.NotEmpty(t, r.Events)
				assert.True(t, r.Events[len(r.Events)-1].Done(), "stream end: %s", r.Body)
				assert.Equal(t, want, a.streamText(t, r.Events), "%s: streamed text after a real handoff", a.name)
			}
			sent++
		}
	}
	return sent
}

// Seed "MoRI-IO (HTTP)", Done when: READ, sequential WRITE and concurrent WRITE succeed on
// chat and completions, streaming and not; the sims confirm each KV arrived;
// smg_pd_kv_connector_mode_total{mode="moriio"} counts every dispatch.
func TestMoRIIOHandsOffTheKV(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		mode       string
		concurrent bool
	}{{"read", sim.MoRIIOModeRead, false}, {"write-sequential", sim.MoRIIOModeWrite, false}, {"write-concurrent", sim.MoRIIOModeWrite, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := startMoRI(t, tc.mode, tc.concurrent, nil, nil)
			sent := runHandoffs(t, f.g, "a mori-io prompt with several words in it")
			waitIdle(t, f.p, f.d)
			p, d := f.p.Stats(), f.d.Stats()
			assert.Equal(t, sent, p.Requests, "one prefill leg per request")
			assert.Equal(t, sent, d.Requests, "one decode leg per request")
			assert.Equal(t, sent, p.HandoffsSent, "handoffs_sent")
			assert.Equal(t, sent, d.HandoffsReceived, "handoffs_received: every KV arrived")
			assert.Zero(t, d.RecomputedPrompts+d.LeakedBlocks+d.Aborted+p.Aborted)
			assert.Zero(t, p.UnmatchedRooms+d.UnmatchedRooms+p.Errors+d.Errors)
			m := f.g.Metrics(t)
			assert.Equal(t, float64(sent), m.Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))
			assert.Zero(t, m.Sum("smg_pd_kv_transfer_failures_total"))
			assert.Zero(t, m.Sum("smg_pd_kv_connector_mode_total", "mode", "passthrough"))
		})
	}
}

// loopbackPair starts a WRITE prefill and decode on two free 127/8 addresses, each on the
// engine's default MoRI-IO ports 6301 and 61005 (a random address per attempt, so parallel
// tests do not collide).
func loopbackPair(t *testing.T) (p, d *sim.Server) {
	t.Helper()
	for try := 0; try < 20; try++ {
		base := fmt.Sprintf("127.%d.%d.", 10+rand.IntN(200), rand.IntN(250))
		ps, perr := sim.Start(sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, Host: base + "1", KVConnector: sim.ConnectorMoRIIO,
			MoRIIOMode: sim.MoRIIOModeWrite, MoRIIOHandshakePort: 6301, MoRIIONotifyPort: 61005})
		if perr != nil {
			continue
		}
		ds, derr := sim.Start(sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, Host: base + "2", KVConnector: sim.ConnectorMoRIIO,
			MoRIIOMode: sim.MoRIIOModeWrite, MoRIIOHandshakePort: 6301, MoRIIONotifyPort: 61005})
		if derr != nil {
			_ = ps.Close()
			continue
		}
		t.Cleanup(func() { _ = ps.Close(); _ = ds.Close() })
		return ps, ds
	}
	t.Skip("no free 127/8 address with ports 6301 and 61005")
	return nil, nil
}

// Seed "MoRI-IO (HTTP)", Done when: the seed's two POST /workers bodies work verbatim (only
// the URLs point at the simulators): WRITE mode with every label at its default — the side
// channel on the URL's host, ports 6301 and 61005, sequential dispatch.
func TestMoRIIOSeedBodiesVerbatim(t *testing.T) {
	t.Parallel()
	pre, dec := loopbackPair(t)
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	g.Register(t, strings.Replace(`{"url": "http://prefill-0:8000", "worker_type": "prefill", "runtime_type": "vllm",
       "kv_connector": "MoRIIOConnector", "labels": {"moriio_mode": "write"}}`, "http://prefill-0:8000", pre.URL(), 1))
	g.Register(t, strings.Replace(`{"url": "http://decode-0:8000", "worker_type": "decode", "runtime_type": "vllm",
       "kv_connector": "MoRIIOConnector", "labels": {"moriio_mode": "write"}}`, "http://decode-0:8000", dec.URL(), 1))
	g.WaitWorkers(t, 2)
	for _, w := range g.Workers(t) {
		assert.Equal(t, "MoRIIOConnector", w.KVConnector, w.URL)
	}
	sent := runHandoffs(t, g, "hello from the seed's mori-io example")
	waitIdle(t, pre, dec)
	assert.Equal(t, sent, dec.Stats().HandoffsReceived)
	assert.Equal(t, sent, pre.Stats().HandoffsSent, "the prefill pushed to 6301/61005 on the decode's URL host: prefill %+v decode %+v", pre.Stats(), dec.Stats())
	assert.Equal(t, float64(sent), g.Metrics(t).Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))
}

// Seed "MoRI-IO (HTTP)": "The gRPC pipeline does not speak MoRI-IO and refuses such pairs
// with 501 moriio_grpc_pd_unsupported": a grpc:// vLLM pair registered with
// MoRIIOConnector is refused on every generation route, streaming and not, before either
// leg is contacted (the gRPC simulators count no Generate RPC), and no breaker opens.
func TestMoRIIOOverGRPCRefusedWith501(t *testing.T) {
	t.Parallel()
	mk := func(role string) *grpcsim.Server {
		s, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: role, Model: model})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	p, d := mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode)
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	for _, s := range []*grpcsim.Server{p, d} {
		g.Register(t, map[string]any{"url": s.URL(), "worker_type": s.Config().Role, "runtime_type": "vllm",
			"kv_connector": "MoRIIOConnector", "labels": map[string]string{"moriio_mode": "read"}})
	}
	g.WaitWorkers(t, 2)
	for _, a := range moriAPIs {
		for _, stream := range []bool{false, true} {
			r := g.Post(t, a.path, a.body("a mori-io prompt over grpc", 4, stream), nil)
			assertRefused(t, r, http.StatusNotImplemented, wire.CodeMoRIIOGRPCPDUnsupported)
			assert.Contains(t, decodeError(t, r).Error.Message, "HTTP PD router", "%s stream=%v", a.name, stream)
		}
	}
	assert.Zero(t, p.Stats().Requests, "prefill never contacted")
	assert.Zero(t, d.Stats().Requests, "decode never contacted")
	for _, w := range g.Workers(t) {
		assert.Equal(t, "ready", w.Status, "%s stays routable: a refusal is not a worker failure", w.URL)
	}
}

// hangGuard bounds a MoRI-IO failure test's request.
const moriHangGuard = 10 * time.Second

// Seed "MoRI-IO (HTTP)": under sequential dispatch (READ and WRITE) a prefill handoff that
// fails its check answers 502 moriio_handoff_invalid and no decode leg is sent; each
// failure is counted in smg_pd_kv_transfer_failures_total and as the prefill's
// backend_error in smg_worker_errors_total.
func TestMoRIIOSequentialInvalidHandoffSendsNoDecode(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{sim.MoRIIOModeRead, sim.MoRIIOModeWrite} {
		for _, fault := range []string{sim.FaultHandoffMissingField, sim.FaultHandoffWrongTransferID} {
			t.Run(mode+"/"+fault, func(t *testing.T) {
				t.Parallel()
				f := startMoRI(t, mode, false, func(c *config.Config) { c.DisableRetries = true }, shortHandoff)
				for _, stream := range []bool{false, true} {
					body := apiChat.body("an unusable handoff", 4, stream)
					body["sim_fault"] = "prefill:" + fault
					r := f.g.Post(t, apiChat.path, body, nil)
					assertRefused(t, r, http.StatusBadGateway, "moriio_handoff_invalid")
				}
				assert.Equal(t, int64(2), f.p.Stats().Requests)
				assert.Zero(t, f.d.Stats().Requests, "no decode leg")
				m := f.g.Metrics(t)
				assert.Equal(t, 2.0, m.Sum("smg_pd_kv_transfer_failures_total"))
				assert.Equal(t, 2.0, m.Sum("smg_pd_kv_connector_mode_total", "mode", "moriio"))
				assert.Equal(t, 2.0, m.Sum("smg_worker_errors_total", "worker_type", "prefill", "error_type", "backend_error"),
					"the prefill answered: an unusable handoff is its 502, not a transport failure")
				assert.Zero(t, m.Sum("smg_worker_errors_total", "error_type", "connection_error"))
			})
		}
	}
}
