package grpcsim

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
)

// tokenspeedService is the TokenSpeedScheduler servicer. Unmodelled RPCs answer
// UNIMPLEMENTED.
type tokenspeedService struct {
	tokenspeedpb.UnimplementedTokenSpeedSchedulerServer
	s *Server
}

func (x *tokenspeedService) Generate(r *tokenspeedpb.GenerateRequest, st grpc.ServerStreamingServer[tokenspeedpb.GenerateResponse]) error {
	req := genRequest{id: r.GetRequestId(), ids: r.GetTokenized().GetInputIds(), stream: r.GetStream(),
		stopIDs: r.GetSamplingParams().GetStopTokenIds(), maxTokens: -1, n: int(r.GetSamplingParams().GetN())}
	if sp := r.GetSamplingParams(); sp != nil && sp.MaxNewTokens != nil {
		req.maxTokens = int(sp.GetMaxNewTokens())
	}
	req.mm = tokenspeedMMInput(r.GetMmInputs())
	if kb := r.KvBootstrapInfo; kb != nil {
		req.hasRoom, req.bootHost, req.bootPort, req.room = true, kb.GetBootstrapHost(), int(kb.GetBootstrapPort()), kb.GetBootstrapRoom()
	}
	req.logprobs, req.topLogprobs = r.GetReturnLogprob(), int(r.GetTopLogprobsNum())
	if sp := r.GetSamplingParams(); sp != nil {
		x.s.recordSampling(Sampling{RequestID: req.id, Temperature: sp.Temperature, TopP: sp.TopP, TopK: sp.TopK,
			MinP: sp.MinP, RepetitionPenalty: sp.RepetitionPenalty})
	}
	if r.DataParallelRank != nil {
		rank := int(r.GetDataParallelRank())
		req.dpRank = &rank
	}
	req.media, req.encode = tokenspeedMedia(r)
	return x.s.generate(st.Context(), req, func(ev event) error {
		resp := &tokenspeedpb.GenerateResponse{RequestId: r.GetRequestId()}
		switch {
		case ev.malformed:
		case ev.complete:
			c := &tokenspeedpb.GenerateComplete{OutputIds: ev.ids, FinishReason: ev.finish, PromptTokens: ev.promptTokens,
				CompletionTokens: ev.completionTokens, CachedTokens: ev.cachedTokens, Index: ev.index}
			if ev.matchedToken != nil {
				c.MatchedStop = &tokenspeedpb.GenerateComplete_MatchedTokenId{MatchedTokenId: *ev.matchedToken}
			}
			c.OutputLogprobs = tokenspeedLogprobs(req, ev)
			resp.Response = &tokenspeedpb.GenerateResponse_Complete{Complete: c}
		default:
			resp.Response = &tokenspeedpb.GenerateResponse_Chunk{Chunk: &tokenspeedpb.GenerateStreamChunk{TokenIds: ev.ids,
				PromptTokens: ev.promptTokens, CompletionTokens: ev.completionTokens, CachedTokens: ev.cachedTokens, Index: ev.index,
				OutputLogprobs: tokenspeedLogprobs(req, ev)}}
		}
		return st.Send(resp)
	})
}

func (x *tokenspeedService) HealthCheck(context.Context, *tokenspeedpb.HealthCheckRequest) (*tokenspeedpb.HealthCheckResponse, error) {
	ok, msg := x.s.health()
	return &tokenspeedpb.HealthCheckResponse{Healthy: ok, Message: msg}, nil
}

// Abort aborts request_id and its "-n<i>" children (grpc.md §3.2).
func (x *tokenspeedService) Abort(_ context.Context, r *tokenspeedpb.AbortRequest) (*tokenspeedpb.AbortResponse, error) {
	if x.s.abort(r.GetRequestId(), true) {
		return &tokenspeedpb.AbortResponse{Success: true, Message: "aborted"}, nil
	}
	return &tokenspeedpb.AbortResponse{Success: false, Message: "not found"}, nil
}

func (x *tokenspeedService) GetModelInfo(context.Context, *tokenspeedpb.GetModelInfoRequest) (*tokenspeedpb.GetModelInfoResponse, error) {
	c := x.s.cfg
	return &tokenspeedpb.GetModelInfoResponse{ModelPath: c.Model, TokenizerPath: c.TokenizerPath, ServedModelName: c.Model,
		ModelType: "sim", Architectures: []string{"SimForCausalLM"}, MaxContextLength: int32(c.MaxModelLen),
		MaxReqInputLen: int32(c.MaxModelLen), VocabSize: tokenBase + tokenRange, EosTokenIds: []int32{2}, ModelDtype: "bfloat16",
		DefaultSamplingParamsJson: c.DefaultSamplingParams}, nil
}

// GetServerInfo reports server_args as TokenSpeed's servicer does (grpc.md §1.2): the
// running window max_num_seqs, the pairing facts (no page_size) and its own parallel-size
// spellings.
func (x *tokenspeedService) GetServerInfo(context.Context, *tokenspeedpb.GetServerInfoRequest) (*tokenspeedpb.GetServerInfoResponse, error) {
	c := x.s.cfg
	mode := "null"
	if c.Role == RolePrefill || c.Role == RoleDecode {
		mode = c.Role
	}
	args := map[string]any{
		"model": c.Model, "served_model_name": c.Model, "tokenizer": c.TokenizerPath,
		"tp_size": 1, "attn_tp_size": 1, "data_parallel_size": max(c.DPSize, 1), "pipeline_parallel_size": 1,
		"context_length": c.MaxModelLen, "max_num_seqs": c.MaxNumSeqs,
		"load_balance_method": "round_robin", "is_embedding": false, "vocab_size": tokenBase + tokenRange,
		"disaggregation_mode": mode, "disaggregation_transfer_backend": c.TransferBackend,
		"disaggregation_bootstrap_port": x.s.BootstrapPort(), "kv_cache_dtype": c.KVCacheDtype,
		"attention_backend": c.AttentionBackend, "pairing_protocol": c.PairingProtocol,
	}
	if c.DPSize > 1 {
		args["dp_size"] = c.DPSize // the attention-DP advertisement (grpc.md §1.1)
	}
	sa, err := structpb.NewStruct(args)
	if err != nil {
		return nil, err
	}
	return &tokenspeedpb.GetServerInfoResponse{ServerArgs: sa, ActiveRequests: int32(x.s.c.running.Load()),
		UptimeSeconds: time.Since(x.s.start).Seconds(), TokenspeedVersion: TokenSpeedVersion,
		StartTime: timestamppb.New(x.s.start)}, nil
}

func (x *tokenspeedService) GetLoads(context.Context, *tokenspeedpb.GetLoadsRequest) (*tokenspeedpb.GetLoadsResponse, error) {
	return &tokenspeedpb.GetLoadsResponse{Timestamp: time.Now().UTC().Format(time.RFC3339), Version: TokenSpeedVersion, DpRankCount: 1,
		Loads: []*tokenspeedpb.SchedulerLoad{{NumRunningReqs: int32(x.s.c.running.Load()), MaxRunningRequests: int32(x.s.cfg.MaxNumSeqs)}}}, nil
}

func (x *tokenspeedService) GetTokenizer(_ *commonpb.GetTokenizerRequest, st grpc.ServerStreamingServer[commonpb.GetTokenizerChunk]) error {
	return x.s.sendTokenizer(st.Send)
}
