package grpcengine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

func startSim(t *testing.T, cfg grpcsim.Config) *grpcsim.Server {
	t.Helper()
	s, err := grpcsim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func newPool(t *testing.T) *grpcengine.Pool {
	t.Helper()
	p := grpcengine.New(grpcengine.Options{})
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func detect(t *testing.T, p *grpcengine.Pool, url string, rt worker.Runtime) ports.GRPCWorkerInfo {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	info, err := p.Detect(ctx, worker.Worker{URL: url, Runtime: rt, Mode: worker.ConnGRPC})
	require.NoError(t, err)
	return info
}

func TestDetectSGLangLabelsFromServerArgs(t *testing.T) {
	t.Parallel()
	s := startSim(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RolePrefill, Model: "m1",
		MaxRunningRequests: 48, MaxModelLen: 8192, PairingProtocol: " kv-v1 ", TokenizerPath: "/models/tok"})
	info := detect(t, newPool(t), s.URL(), worker.RuntimeUnspecified)
	assert.Equal(t, worker.RuntimeSGLang, info.Runtime)
	assert.Equal(t, []string{"m1"}, info.Models)
	assert.Equal(t, map[string]string{
		"model_path": "m1", "served_model_name": "m1", "tokenizer_path": "/models/tok",
		"tp_size": "1", "dp_size": "1", "pp_size": "1",
		"context_length": "8192", "max_running_requests": "48",
		"load_balance_method": "round_robin", "disaggregation_mode": "prefill", "is_embedding": "false",
		"vocab_size": "31000", "disaggregation_transfer_backend": "mooncake",
		"disaggregation_bootstrap_port": itoa(s.BootstrapPort()), "kv_cache_dtype": "auto",
		"page_size": "16", "attention_backend": "flashinfer", "pairing_protocol": "kv-v1",
		"version": grpcsim.SGLangVersion, "max_context_length": "8192",
	}, info.Labels)
	assert.Empty(t, info.KVConnector)
}

func TestDetectTokenSpeedFoldsParallelSizesAndReportsMaxNumSeqs(t *testing.T) {
	t.Parallel()
	s := startSim(t, grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: grpcsim.RoleDecode, MaxNumSeqs: 32, DPSize: 2, DPRank: 1})
	info := detect(t, newPool(t), s.URL(), worker.RuntimeUnspecified)
	assert.Equal(t, worker.RuntimeTokenSpeed, info.Runtime)
	l := info.Labels
	assert.Equal(t, "32", l["max_num_seqs"])
	assert.Equal(t, "2", l["dp_size"])
	assert.Equal(t, "2", l["data_parallel_size"])
	assert.Equal(t, "1", l["pp_size"], "pipeline_parallel_size folds into pp_size")
	assert.Equal(t, "sim-model", l["model"])
	assert.Equal(t, grpcsim.TokenSpeedVersion, l["version"])
	assert.Equal(t, "mooncake", l["disaggregation_transfer_backend"])
	assert.NotContains(t, l, "page_size", "TokenSpeed reports no page_size")
	assert.NotContains(t, l, "pairing_protocol", "an unset SMG_PAIRING_PROTOCOL is skipped")
	assert.NotContains(t, l, "tokenizer", "an empty tokenizer path is skipped")
}

func TestDetectVLLMFlattensServerInfo(t *testing.T) {
	t.Parallel()
	s := startSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RolePrefill, EngineID: "eng-a",
		KVConnector: grpcsim.ConnectorMooncake, PairingProtocol: "p1", VLLMServicer: grpcsim.VLLMServicer111})
	info := detect(t, newPool(t), s.URL(), worker.RuntimeUnspecified)
	assert.Equal(t, worker.RuntimeVLLM, info.Runtime)
	assert.Equal(t, "MooncakeConnector", info.KVConnector)
	assert.Equal(t, "kv_producer", info.KVRole)
	assert.Equal(t, "eng-a", info.KVEngineID)
	l := info.Labels
	for k, v := range map[string]string{"kv_cache_dtype": "auto", "block_size": "16", "attention_backend": "FLASH_ATTN",
		"model_dtype": "torch.bfloat16", "pairing_protocol": "p1", "data_parallel_size": "1", "server_type": "vllm-grpc",
		"is_paused": "false", "max_context_length": "32768", "served_model_name": "sim-model"} {
		assert.Equal(t, v, l[k], k)
	}
	assert.NotContains(t, l, "version", "vLLM reports no version")
	assert.NotContains(t, l, "kv_connector", "connector facts move to the worker's fields")
	assert.NotContains(t, l, "active_requests", "zero numbers are skipped")
}

func TestDetectMultiConnectorWithOneNixlChildIsReportedAsNixl(t *testing.T) {
	t.Parallel()
	one := startSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, EngineID: "parent",
		KVConnector: grpcsim.ConnectorMulti, MultiChildren: []string{"NixlConnector", "LMCacheConnectorV1"}})
	two := startSim(t, grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode, EngineID: "parent",
		KVConnector: grpcsim.ConnectorMulti, MultiChildren: []string{"NixlConnector", "MooncakeConnector"}})
	p := newPool(t)
	info := detect(t, p, one.URL(), worker.RuntimeVLLM)
	assert.Equal(t, "NixlConnector", info.KVConnector)
	assert.Equal(t, "parent", info.KVEngineID, "a child without engine_id reports the parent's")
	info = detect(t, p, two.URL(), worker.RuntimeVLLM)
	assert.Equal(t, "MultiConnector", info.KVConnector, "two supported children stay passthrough")
}

func TestDetectErrors(t *testing.T) {
	t.Parallel()
	p := newPool(t)
	s := startSim(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: grpcsim.RoleDecode})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := p.Detect(ctx, worker.Worker{URL: s.URL(), Runtime: worker.RuntimeVLLM})
	assert.Equal(t, 501, statusOf(err), "asking the wrong runtime's service is UNIMPLEMENTED")
	_, err = p.Detect(ctx, worker.Worker{URL: s.URL(), Runtime: worker.RuntimeTRTLLM})
	assert.ErrorContains(t, err, "trtllm")

	dead := grpcengine.New(grpcengine.Options{ConnectTimeout: 200 * time.Millisecond})
	defer dead.Close()
	short, cancel2 := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel2()
	_, err = dead.Detect(short, worker.Worker{URL: "grpc://127.0.0.1:1"})
	require.Error(t, err)
	assert.NotErrorIs(t, err, grpcengine.ErrNoEngineService)
}

// GetModelInfo default_sampling_params_json becomes the default_sampling_params_json label
// on every runtime (the decode's sampling defaults); none reported, no label.
func TestDetectReadsDefaultSamplingParams(t *testing.T) {
	t.Parallel()
	const js = `{"temperature":0.6,"top_k":20}`
	for _, engine := range []string{grpcsim.EngineSGLang, grpcsim.EngineTokenSpeed, grpcsim.EngineVLLM} {
		s := startSim(t, grpcsim.Config{Engine: engine, Role: grpcsim.RoleDecode, DefaultSamplingParams: js})
		info := detect(t, newPool(t), s.URL(), worker.Runtime(engine))
		assert.Equal(t, js, info.Labels["default_sampling_params_json"], engine)
		bare := startSim(t, grpcsim.Config{Engine: engine, Role: grpcsim.RoleDecode})
		_, ok := detect(t, newPool(t), bare.URL(), worker.Runtime(engine)).Labels["default_sampling_params_json"]
		assert.False(t, ok, engine)
	}
}
