package grpcsim

import (
	"context"
	"time"

	"google.golang.org/grpc"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
)

// vllmService is the VllmEngine servicer (SMG's vLLM gRPC servicer). Unmodelled RPCs
// answer UNIMPLEMENTED.
type vllmService struct {
	vllmpb.UnimplementedVllmEngineServer
	s *Server
}

func (x *vllmService) Generate(r *vllmpb.GenerateRequest, st grpc.ServerStreamingServer[vllmpb.GenerateResponse]) error {
	req := genRequest{id: r.GetRequestId(), ids: r.GetTokenized().GetInputIds(), stream: r.GetStream(),
		stopIDs: r.GetSamplingParams().GetStopTokenIds(), maxTokens: -1, n: int(r.GetSamplingParams().GetN())}
	if sp := r.GetSamplingParams(); sp != nil && sp.MaxTokens != nil {
		req.maxTokens = int(sp.GetMaxTokens())
	}
	legacy := r.GetKvTransferParams()
	p, err := parseKVParams(r.KvTransferParamsJson, legacy.GetRemoteHost(), legacy.GetRemotePort(), legacy != nil)
	if err != nil {
		x.s.c.requests.Add(1)
		x.s.c.errors.Add(1)
		return err
	}
	req.kvParams = p
	req.mm = vllmMMInput(r, x.s.cfg.vllmNewer())
	if sp := r.GetSamplingParams(); sp != nil && sp.Logprobs != nil {
		req.logprobs, req.topLogprobs = true, int(sp.GetLogprobs())
	}
	if sp := r.GetSamplingParams(); sp != nil && sp.PromptLogprobs != nil {
		req.promptLogprobs = true
	}
	if sp := r.GetSamplingParams(); sp != nil {
		x.s.recordSampling(Sampling{RequestID: req.id, Temperature: sp.Temperature, TopP: ptr(sp.GetTopP()),
			TopK: ptr(int32(sp.GetTopK())), MinP: ptr(sp.GetMinP()), RepetitionPenalty: ptr(sp.GetRepetitionPenalty())})
	}
	if r.DataParallelRank != nil {
		rank := int(r.GetDataParallelRank())
		req.dpRank = &rank
	}
	newer := x.s.cfg.vllmNewer()
	return x.s.generate(st.Context(), req, func(ev event) error {
		resp := &vllmpb.GenerateResponse{}
		// vLLM streams with output_kind=DELTA: every streamed message counts the tokens it
		// carries, not the running total (a non-streamed complete carries them all).
		completion := ev.completionTokens
		if req.stream {
			completion = uint32(len(ev.ids))
		}
		switch {
		case ev.malformed:
		case ev.complete:
			c := &vllmpb.GenerateComplete{OutputIds: ev.ids, FinishReason: ev.finish, PromptTokens: ev.promptTokens,
				CompletionTokens: completion, CachedTokens: ev.cachedTokens, KvTransferParamsJson: ev.kvParamsJSON, Index: ev.index}
			if newer {
				c.MediaIdentity = ev.identity
			}
			if ev.matchedToken != nil {
				c.MatchedStop = &vllmpb.GenerateComplete_MatchedTokenId{MatchedTokenId: *ev.matchedToken}
			}
			c.OutputLogprobs = vllmLogprobs(req, ev)
			c.InputLogprobs = vllmInputLogprobs(req)
			resp.Response = &vllmpb.GenerateResponse_Complete{Complete: c}
		default:
			resp.Response = &vllmpb.GenerateResponse_Chunk{Chunk: &vllmpb.GenerateStreamChunk{TokenIds: ev.ids,
				PromptTokens: ev.promptTokens, CompletionTokens: completion, CachedTokens: ev.cachedTokens, Index: ev.index,
				OutputLogprobs: vllmLogprobs(req, ev)}}
		}
		return st.Send(resp)
	})
}

func (x *vllmService) HealthCheck(context.Context, *vllmpb.HealthCheckRequest) (*vllmpb.HealthCheckResponse, error) {
	ok, msg := x.s.health()
	return &vllmpb.HealthCheckResponse{Healthy: ok, Message: msg}, nil
}

func (x *vllmService) Abort(_ context.Context, r *vllmpb.AbortRequest) (*vllmpb.AbortResponse, error) {
	for _, id := range r.GetRequestIds() {
		x.s.abort(id, false)
	}
	return &vllmpb.AbortResponse{}, nil
}

func (x *vllmService) GetModelInfo(context.Context, *vllmpb.GetModelInfoRequest) (*vllmpb.GetModelInfoResponse, error) {
	c := x.s.cfg
	return &vllmpb.GetModelInfoResponse{ModelPath: c.Model, IsGeneration: true, MaxContextLength: uint32(c.MaxModelLen),
		VocabSize: tokenBase + tokenRange, ServedModelName: c.Model, TokenizerPath: c.TokenizerPath, ModelType: "sim",
		Architectures: []string{"SimForCausalLM"}, EosTokenIds: []int32{2}, MaxReqInputLen: int32(c.MaxModelLen),
		SupportsVision: !c.LanguageModelOnly, DefaultSamplingParamsJson: c.DefaultSamplingParams}, nil
}

// GetServerInfo reports kv_connector/kv_role/kv_engine_id (MultiConnector reduced as SMG's
// servicer does, grpc.md §1.9), fields 1-10. Only a newer servicer (Config.VLLMServicer
// VLLMServicer111) also reports the pairing facts and media processing of fields 11-17
// (grpc.md §1.1); the published one leaves them unset.
func (x *vllmService) GetServerInfo(context.Context, *vllmpb.GetServerInfoRequest) (*vllmpb.GetServerInfoResponse, error) {
	c := x.s.cfg
	conn, id := c.connectorReport()
	r := &vllmpb.GetServerInfoResponse{ActiveRequests: uint32(x.s.c.running.Load()),
		UptimeSeconds: time.Since(x.s.start).Seconds(), ServerType: "vllm-grpc",
		KvConnector: conn, KvRole: c.KVRole, KvEngineId: id, DataParallelSize: int32(max(c.DPSize, 1))}
	if c.vllmNewer() {
		r.KvCacheDtype, r.BlockSize, r.AttentionBackend = c.KVCacheDtype, int32(c.PageSize), c.AttentionBackend
		r.ModelDtype, r.PairingProtocol = c.ModelDtype, c.PairingProtocol
		r.MmProcessor, r.MmMediaRefSchemes = "inprocess", "http,https,data"
	}
	return r, nil
}

func (x *vllmService) GetLoads(context.Context, *vllmpb.GetLoadsRequest) (*vllmpb.GetLoadsResponse, error) {
	return &vllmpb.GetLoadsResponse{Timestamp: time.Now().UTC().Format(time.RFC3339), DpRankCount: 1,
		Loads: []*vllmpb.SchedulerLoad{{NumRunningReqs: int32(x.s.c.running.Load())}}}, nil
}

func (x *vllmService) GetTokenizer(_ *commonpb.GetTokenizerRequest, st grpc.ServerStreamingServer[commonpb.GetTokenizerChunk]) error {
	return x.s.sendTokenizer(st.Send)
}
