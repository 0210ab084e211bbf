package grpcengine

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// detectOrder is the order in which answering services win when several answer.
var detectOrder = []worker.Runtime{worker.RuntimeSGLang, worker.RuntimeVLLM, worker.RuntimeTokenSpeed}

// ErrNoEngineService is wrapped by Detect when the worker answers but serves none of the
// SGLang, vLLM and TokenSpeed services (every GetServerInfo was UNIMPLEMENTED).
var ErrNoEngineService = errors.New("grpcengine: worker serves no SglangScheduler, VllmEngine or TokenSpeedScheduler service")

// Detect implements ports.GRPCEngines. With w.Runtime unspecified it calls GetServerInfo
// of the three services at once and takes the first answering one in the order sglang,
// vllm, tokenspeed; then it reads GetModelInfo of that runtime. Labels follow grpc.md
// §1.2: the runtime's server_args keys (SGLang, TokenSpeed) or the flattened
// GetServerInfoResponse (vLLM), plus `version`, model and tokenizer paths, and
// `max_context_length` from the model info. The call is bounded by ctx only.
//
// Errors: a transport or status error of the runtime's service (with the gRPC status),
// ErrNoEngineService, or an error for a runtime without a gRPC service here (trtllm, mlx,
// generic, external). An encode worker serving only TokenSpeedEncoder is reported as
// tokenspeed without labels (encodeprobe.go).
func (p *Pool) Detect(ctx context.Context, w worker.Worker) (ports.GRPCWorkerInfo, error) {
	info, err := p.detect(ctx, w)
	if err != nil && encodeOnly(w, err) {
		return detectEncoder(), nil
	}
	return info, err
}

func (p *Pool) detect(ctx context.Context, w worker.Worker) (ports.GRPCWorkerInfo, error) {
	if w.Runtime != worker.RuntimeUnspecified && w.Runtime != "" {
		return p.detectAs(ctx, w, w.Runtime)
	}
	type result struct {
		info ports.GRPCWorkerInfo
		err  error
	}
	results := make([]result, len(detectOrder))
	var wg sync.WaitGroup
	for i, rt := range detectOrder {
		wg.Add(1)
		go func() {
			defer wg.Done()
			info, err := p.serverInfo(ctx, w, rt)
			results[i] = result{info, err}
		}()
	}
	wg.Wait()
	var firstErr error
	for i, r := range results {
		if r.err == nil {
			info := r.info
			return info, p.modelInfo(ctx, w, detectOrder[i], &info)
		}
		if status.Code(r.err) != codes.Unimplemented && firstErr == nil {
			firstErr = r.err
		}
	}
	if firstErr != nil {
		return ports.GRPCWorkerInfo{}, firstErr
	}
	return ports.GRPCWorkerInfo{}, fmt.Errorf("%w (worker %s)", ErrNoEngineService, w.URL)
}

func (p *Pool) detectAs(ctx context.Context, w worker.Worker, rt worker.Runtime) (ports.GRPCWorkerInfo, error) {
	info, err := p.serverInfo(ctx, w, rt)
	if err != nil {
		return info, err
	}
	return info, p.modelInfo(ctx, w, rt, &info)
}

// serverInfo calls rt's GetServerInfo and turns the answer into labels.
func (p *Pool) serverInfo(ctx context.Context, w worker.Worker, rt worker.Runtime) (ports.GRPCWorkerInfo, error) {
	info := ports.GRPCWorkerInfo{Runtime: rt, Labels: map[string]string{}}
	switch rt {
	case worker.RuntimeSGLang:
		c, err := p.SGLang(w)
		if err != nil {
			return info, err
		}
		r, err := c.GetServerInfo(ctx, &sglangpb.GetServerInfoRequest{})
		if err != nil {
			return info, err
		}
		pickStruct(info.Labels, r.GetServerArgs(), sglangServerArgs)
		setLabel(info.Labels, wire.LabelVersion, r.GetSglangVersion())
	case worker.RuntimeTokenSpeed:
		c, err := p.TokenSpeed(w)
		if err != nil {
			return info, err
		}
		r, err := c.GetServerInfo(ctx, &tokenspeedpb.GetServerInfoRequest{})
		if err != nil {
			return info, err
		}
		pickStruct(info.Labels, r.GetServerArgs(), tokenspeedServerArgs)
		pickStruct(info.Labels, r.GetSchedulerInfo(), []string{"shm_namespace_id"})
		setLabel(info.Labels, wire.LabelVersion, r.GetTokenspeedVersion())
		// TokenSpeed's own spellings of the parallel sizes fold into the common names.
		for alias, name := range map[string]string{"data_parallel_size": wire.LabelDPSize, "pipeline_parallel_size": "pp_size"} {
			setLabel(info.Labels, name, info.Labels[alias])
		}
	case worker.RuntimeVLLM:
		c, err := p.VLLM(w)
		if err != nil {
			return info, err
		}
		r, err := c.GetServerInfo(ctx, &vllmpb.GetServerInfoRequest{})
		if err != nil {
			return info, err
		}
		flattenMessage(info.Labels, r.ProtoReflect())
		// The connector facts have fields of their own on the worker (as registered ones do).
		info.KVConnector, info.KVRole, info.KVEngineID = info.Labels[wire.LabelKVConnector], info.Labels[wire.LabelKVRole], info.Labels[wire.LabelKVEngineID]
		delete(info.Labels, wire.LabelKVConnector)
		delete(info.Labels, wire.LabelKVRole)
		delete(info.Labels, wire.LabelKVEngineID)
	default:
		return info, fmt.Errorf("grpcengine: runtime %s has no gRPC service in this gateway", rt)
	}
	return info, nil
}

// modelInfo adds rt's GetModelInfo facts to info: model and tokenizer paths,
// max_context_length and default_sampling_params_json as labels (server-info labels win),
// and the served model id.
func (p *Pool) modelInfo(ctx context.Context, w worker.Worker, rt worker.Runtime, info *ports.GRPCWorkerInfo) error {
	var served, path, tokenizer, defaults string
	var maxCtx int64
	switch rt {
	case worker.RuntimeSGLang:
		c, err := p.SGLang(w)
		if err != nil {
			return err
		}
		r, err := c.GetModelInfo(ctx, &sglangpb.GetModelInfoRequest{})
		if err != nil {
			return err
		}
		served, path, tokenizer, maxCtx = r.GetServedModelName(), r.GetModelPath(), r.GetTokenizerPath(), int64(r.GetMaxContextLength())
		defaults = r.GetDefaultSamplingParamsJson()
	case worker.RuntimeTokenSpeed:
		c, err := p.TokenSpeed(w)
		if err != nil {
			return err
		}
		r, err := c.GetModelInfo(ctx, &tokenspeedpb.GetModelInfoRequest{})
		if err != nil {
			return err
		}
		served, path, tokenizer, maxCtx = r.GetServedModelName(), r.GetModelPath(), r.GetTokenizerPath(), int64(r.GetMaxContextLength())
		defaults = r.GetDefaultSamplingParamsJson()
	case worker.RuntimeVLLM:
		c, err := p.VLLM(w)
		if err != nil {
			return err
		}
		r, err := c.GetModelInfo(ctx, &vllmpb.GetModelInfoRequest{})
		if err != nil {
			return err
		}
		served, path, tokenizer, maxCtx = r.GetServedModelName(), r.GetModelPath(), r.GetTokenizerPath(), int64(r.GetMaxContextLength())
		defaults = r.GetDefaultSamplingParamsJson()
		// supports_vision=false marks a --language-model-only decode pool (grpc.md §1.11).
		info.Labels[LabelSupportsVision] = strconv.FormatBool(r.GetSupportsVision())
	}
	setLabel(info.Labels, "served_model_name", served)
	setLabel(info.Labels, "model_path", path)
	setLabel(info.Labels, "tokenizer_path", tokenizer)
	setNumber(info.Labels, "max_context_length", maxCtx)
	setLabel(info.Labels, wire.LabelDefaultSamplingParams, defaults)
	model := info.Labels["served_model_name"]
	if model == "" {
		model = firstNonEmpty(info.Labels["model_path"], info.Labels["model"])
	}
	if model != "" {
		info.Models = []string{model}
	}
	return nil
}

func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}
