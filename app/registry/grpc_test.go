package registry_test

import (
	"context"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func newGRPCService(t *testing.T, cfg config.Config) *registry.Service {
	t.Helper()
	pool := grpcengine.New(grpcengine.Options{})
	s := registry.New(memory.NewWorkers(), cfg, nil, slog.New(slog.DiscardHandler)).WithGRPC(pool)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
		_ = pool.Close()
	})
	return s
}

func startGRPCSim(t *testing.T, cfg grpcsim.Config) *grpcsim.Server {
	t.Helper()
	srv, err := grpcsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func TestGRPCWorkersRegisterFromServerInfo(t *testing.T) {
	t.Parallel()
	s := newGRPCService(t, testConfig())
	sgP := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill, MaxRunningRequests: 64})
	sgD := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode, MaxRunningRequests: 64})
	vP := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, EngineID: "p-eng",
		KVConnector: grpcsim.ConnectorMulti, MultiChildren: []string{grpcsim.ConnectorNixl}, VLLMServicer: grpcsim.VLLMServicer111})
	vPub := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode})
	tsD := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode, MaxNumSeqs: 8, PairingProtocol: "ts-1"})
	port := sgP.BootstrapPort()

	l := readyWorker(t, s, registry.Spec{URL: sgP.URL(), WorkerType: "prefill", BootstrapPort: &port})
	assert.Equal(t, worker.RuntimeSGLang, l.Runtime)
	assert.Equal(t, worker.ConnGRPC, l.Mode)
	assert.Equal(t, []string{"sim-model"}, l.Models)
	assert.Equal(t, "64", l.Labels["max_running_requests"])
	assert.Equal(t, grpcsim.SGLangVersion, l.Labels["version"])
	assert.Equal(t, "sglang/mooncake/dtype=auto,page=16,attn=flashinfer", selection.PairingKey(l.Worker))
	d := readyWorker(t, s, registry.Spec{URL: sgD.URL(), WorkerType: "decode"})
	assert.Equal(t, selection.PairingKey(l.Worker), selection.PairingKey(d.Worker))

	v := readyWorker(t, s, registry.Spec{URL: vP.URL(), WorkerType: "prefill"})
	assert.Equal(t, worker.RuntimeVLLM, v.Runtime)
	assert.Equal(t, "NixlConnector", v.KVConnector, "a MultiConnector with one NIXL child is reported as NIXL")
	assert.Equal(t, "p-eng", v.EngineID())
	assert.True(t, v.EngineIDConfirmed(), "registration read the id")
	assert.Equal(t, "vllm/nixl/dtype=auto,page=16,attn=FLASH_ATTN,model=torch.bfloat16", selection.PairingKey(v.Worker))
	pub := readyWorker(t, s, registry.Spec{URL: vPub.URL(), WorkerType: "decode"})
	assert.Equal(t, "vllm/nixl/?", selection.PairingKey(pub.Worker), "the published vLLM servicer reports no layout")

	ts := readyWorker(t, s, registry.Spec{URL: tsD.URL(), WorkerType: "decode"})
	assert.Equal(t, worker.RuntimeTokenSpeed, ts.Runtime)
	assert.Equal(t, "8", ts.Labels["max_num_seqs"])
	assert.Equal(t, "ts-1", selection.PairingKey(ts.Worker), "the servicer's SMG_PAIRING_PROTOCOL is the key")
}

func TestGRPCRegisteredFactsWinOverReported(t *testing.T) {
	t.Parallel()
	s := newGRPCService(t, testConfig())
	srv := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode, PairingProtocol: "from-env"})
	l := readyWorker(t, s, registry.Spec{URL: srv.URL(), WorkerType: "decode", RuntimeType: "tokenspeed",
		Models: []registry.ModelCard{{ID: "mine"}}, Labels: map[string]string{"pairing_protocol": "from-label"}})
	assert.Equal(t, []string{"mine"}, l.Models)
	assert.Equal(t, "from-label", l.Labels["pairing_protocol"], "the label wins over SMG_PAIRING_PROTOCOL")
}

// A gRPC prefill or decode of a runtime without a PD protocol (trtllm, mlx) is registered:
// the gateway does not speak its service, so it is made ready with its registered facts
// without a probe; its PD requests are refused later (400 runtime_pd_not_supported).
func TestGRPCPDLegOnRuntimeWithoutPDIsRegistered(t *testing.T) {
	t.Parallel()
	s := newGRPCService(t, testConfig())
	for i, rt := range []string{"trtllm", "mlx"} {
		for j, role := range []string{"prefill", "decode"} {
			l := readyWorker(t, s, registry.Spec{URL: fmt.Sprintf("grpc://127.0.0.1:%d", 1+2*i+j), WorkerType: role, RuntimeType: rt})
			assert.Equal(t, worker.Runtime(rt), l.Runtime, "%s %s", rt, role)
		}
	}
}

func TestGRPCWorkerThatDoesNotAnswerStaysPending(t *testing.T) {
	t.Parallel()
	s := newGRPCService(t, testConfig())
	acc, err := s.Register(context.Background(), registry.Spec{URL: "grpc://127.0.0.1:1", WorkerType: "decode"})
	require.NoError(t, err)
	time.Sleep(200 * time.Millisecond)
	l, err := s.Get(acc.WorkerID)
	require.NoError(t, err)
	assert.Equal(t, worker.StatusPending, l.Status())
	assert.Equal(t, worker.RuntimeUnspecified, l.Runtime, "not detected yet")
}

func TestGRPCWorkerWithHealthChecksOffIsDetectedOnceThenReady(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.DisableHealthCheck = true
	s := newGRPCService(t, cfg)
	srv := startGRPCSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode})
	l := readyWorker(t, s, registry.Spec{URL: srv.URL(), WorkerType: "decode"})
	assert.Equal(t, worker.RuntimeVLLM, l.Runtime, "detected without a health probe")
	assert.Equal(t, "NixlConnector", l.KVConnector)

	g := readyWorker(t, s, registry.Spec{URL: "grpc://127.0.0.1:1", WorkerType: "decode"})
	assert.Equal(t, worker.RuntimeSGLang, g.Runtime, "an unreachable worker is registered with the default runtime")
}
