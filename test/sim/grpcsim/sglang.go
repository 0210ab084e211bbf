package grpcsim

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
)

// sglangService is the SglangScheduler servicer. RPCs the simulator does not model
// (Embed, loads beyond the window, profiling, LoRA, KV events) answer UNIMPLEMENTED
// through the embedded stub.
type sglangService struct {
	sglangpb.UnimplementedSglangSchedulerServer
	s *Server
}

func (x *sglangService) Generate(r *sglangpb.GenerateRequest, st grpc.ServerStreamingServer[sglangpb.GenerateResponse]) error {
	req := genRequest{id: r.GetRequestId(), ids: r.GetTokenized().GetInputIds(), stream: r.GetStream(),
		stopIDs: r.GetSamplingParams().GetStopTokenIds(), maxTokens: -1, n: int(r.GetSamplingParams().GetN())}
	if sp := r.GetSamplingParams(); sp != nil && sp.MaxNewTokens != nil {
		req.maxTokens = int(sp.GetMaxNewTokens())
	}
	req.mm = sglangMMInput(r.GetMmInputs())
	if dp := r.GetDisaggregatedParams(); dp != nil {
		req.hasRoom, req.bootHost, req.bootPort, req.room = true, dp.GetBootstrapHost(), int(dp.GetBootstrapPort()), int64(dp.GetBootstrapRoom())
	}
	req.logprobs, req.topLogprobs = r.GetReturnLogprob(), int(r.GetTopLogprobsNum())
	req.promptLogprobs = r.GetReturnLogprob() && r.GetLogprobStartLen() >= 0
	if sp := r.GetSamplingParams(); sp != nil {
		x.s.recordSampling(Sampling{RequestID: req.id, Temperature: ptr(sp.GetTemperature()), TopP: ptr(sp.GetTopP()),
			TopK: ptr(sp.GetTopK()), MinP: ptr(sp.GetMinP()), RepetitionPenalty: ptr(sp.GetRepetitionPenalty())})
	}
	// SGLang's servicer never reads data_parallel_rank: its scheduler places the request
	// itself, here on rank DPRank. Only Config.SGLangDPRankPin honours the pin.
	if rank := int(r.GetDataParallelRank()); x.s.cfg.SGLangDPRankPin && (rank != 0 || x.s.cfg.DPSize > 1) {
		req.dpRank = &rank
	} else if x.s.cfg.DPSize > 1 {
		rank := x.s.cfg.DPRank
		req.dpRank = &rank
	}
	return x.s.generate(st.Context(), req, func(ev event) error {
		resp := &sglangpb.GenerateResponse{RequestId: r.GetRequestId()}
		switch {
		case ev.malformed:
		case ev.complete:
			c := &sglangpb.GenerateComplete{OutputIds: ev.ids, FinishReason: ev.finish, PromptTokens: ev.promptTokens,
				CompletionTokens: ev.completionTokens, CachedTokens: ev.cachedTokens, Index: ev.index}
			if ev.matchedToken != nil {
				c.MatchedStop = &sglangpb.GenerateComplete_MatchedTokenId{MatchedTokenId: *ev.matchedToken}
			}
			c.OutputLogprobs = sglangLogprobs(req, ev)
			c.InputLogprobs = sglangInputLogprobs(req)
			resp.Response = &sglangpb.GenerateResponse_Complete{Complete: c}
		default:
			resp.Response = &sglangpb.GenerateResponse_Chunk{Chunk: &sglangpb.GenerateStreamChunk{TokenIds: ev.ids,
				PromptTokens: ev.promptTokens, CompletionTokens: ev.completionTokens, CachedTokens: ev.cachedTokens, Index: ev.index,
				OutputLogprobs: sglangLogprobs(req, ev)}}
		}
		return st.Send(resp)
	})
}

func (x *sglangService) HealthCheck(context.Context, *sglangpb.HealthCheckRequest) (*sglangpb.HealthCheckResponse, error) {
	ok, msg := x.s.health()
	return &sglangpb.HealthCheckResponse{Healthy: ok, Message: msg}, nil
}

func (x *sglangService) Abort(_ context.Context, r *sglangpb.AbortRequest) (*sglangpb.AbortResponse, error) {
	if x.s.abort(r.GetRequestId(), false) {
		return &sglangpb.AbortResponse{Success: true, Message: "aborted"}, nil
	}
	return &sglangpb.AbortResponse{Success: false, Message: "not found"}, nil
}

func (x *sglangService) GetModelInfo(context.Context, *sglangpb.GetModelInfoRequest) (*sglangpb.GetModelInfoResponse, error) {
	c := x.s.cfg
	return &sglangpb.GetModelInfoResponse{ModelPath: c.Model, TokenizerPath: c.TokenizerPath, IsGeneration: true,
		ServedModelName: c.Model, MaxContextLength: int32(c.MaxModelLen), VocabSize: tokenBase + tokenRange,
		ModelType: "sim", Architectures: []string{"SimForCausalLM"}, EosTokenIds: []int32{2},
		DefaultSamplingParamsJson: c.DefaultSamplingParams}, nil
}

// GetServerInfo reports the PD facts in server_args as SGLang's servicer does (grpc.md
// §1.1-1.2): transfer backend, bootstrap port, kv_cache_dtype, page_size,
// attention_backend, pairing_protocol, max_running_requests and context_length.
func (x *sglangService) GetServerInfo(context.Context, *sglangpb.GetServerInfoRequest) (*sglangpb.GetServerInfoResponse, error) {
	c := x.s.cfg
	mode := "null"
	if c.Role == RolePrefill || c.Role == RoleDecode {
		mode = c.Role
	}
	args := map[string]any{
		"model_path": c.Model, "served_model_name": c.Model, "tokenizer_path": c.TokenizerPath,
		"tp_size": 1, "dp_size": max(c.DPSize, 1), "pp_size": 1,
		"context_length": c.MaxModelLen, "max_running_requests": c.MaxRunningRequests,
		"load_balance_method": "round_robin", "disaggregation_mode": mode, "is_embedding": false,
		"vocab_size": tokenBase + tokenRange, "disaggregation_transfer_backend": c.TransferBackend,
		"disaggregation_bootstrap_port": x.s.BootstrapPort(), "kv_cache_dtype": c.KVCacheDtype,
		"page_size": c.PageSize, "attention_backend": c.AttentionBackend, "pairing_protocol": c.PairingProtocol,
	}
	sa, err := structpb.NewStruct(args)
	if err != nil {
		return nil, err
	}
	return &sglangpb.GetServerInfoResponse{ServerArgs: sa, ActiveRequests: int32(x.s.c.running.Load()),
		UptimeSeconds: time.Since(x.s.start).Seconds(), SglangVersion: SGLangVersion, ServerType: "grpc",
		StartTime: timestamppb.New(x.s.start)}, nil
}

// GetLoads reports one rank (the instance's DPRank); with include "disagg" or "all" a
// disaggregation section as SGLang's servicer sends in PD mode: the mode, running requests
// as the role's inflight/transfer queue, and fixed transfer figures (2.5 ms, 8 GB/s).
func (x *sglangService) GetLoads(_ context.Context, r *sglangpb.GetLoadsRequest) (*sglangpb.GetLoadsResponse, error) {
	running := int32(x.s.c.running.Load())
	l := &sglangpb.SchedulerLoad{DpRank: int32(x.s.cfg.DPRank), NumRunningReqs: running, MaxRunningRequests: int32(x.s.cfg.MaxRunningRequests)}
	for _, inc := range r.GetInclude() {
		if inc == "disagg" || inc == "all" {
			d := &sglangpb.DisaggregationMetrics{Mode: x.s.cfg.Role, KvTransferLatencyMs: 2.5, KvTransferSpeedGbS: 8}
			if x.s.cfg.Role == RolePrefill {
				d.PrefillInflightQueueReqs = running
			} else {
				d.DecodeTransferQueueReqs = running
			}
			l.Disaggregation = d
		}
	}
	return &sglangpb.GetLoadsResponse{Timestamp: time.Now().UTC().Format(time.RFC3339), Version: SGLangVersion, DpRankCount: 1,
		Loads: []*sglangpb.SchedulerLoad{l}}, nil
}

func (x *sglangService) GetTokenizer(_ *commonpb.GetTokenizerRequest, st grpc.ServerStreamingServer[commonpb.GetTokenizerChunk]) error {
	return x.s.sendTokenizer(st.Send)
}
