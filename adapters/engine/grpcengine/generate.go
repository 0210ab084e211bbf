package grpcengine

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"google.golang.org/grpc"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

var _ ports.GRPCGenerator = (*Pool)(nil)

// stream adapts one engine's Generate client stream to ports.GRPCStream.
type stream[T any] struct {
	recv   func() (*T, error)
	conv   func(*T) ports.GRPCEvent
	cancel context.CancelFunc
	once   sync.Once
}

func (s *stream[T]) Recv() (ports.GRPCEvent, error) {
	m, err := s.recv()
	if err != nil {
		return ports.GRPCEvent{}, err
	}
	return s.conv(m), nil
}

func (s *stream[T]) Close() { s.once.Do(s.cancel) }

func open[T any](ctx context.Context, call func(context.Context) (grpc.ServerStreamingClient[T], error), conv func(*T) ports.GRPCEvent) (ports.GRPCStream, error) {
	cctx, cancel := context.WithCancel(ctx)
	st, err := call(cctx)
	if err != nil {
		cancel()
		return nil, err
	}
	return &stream[T]{recv: st.Recv, conv: conv, cancel: cancel}, nil
}

// Generate opens leg's Generate RPC on its worker's engine service (SGLang SglangScheduler,
// TokenSpeed TokenSpeedScheduler, vLLM VllmEngine; smg-spec.md §9.1, grpc.md §1.1).
func (p *Pool) Generate(ctx context.Context, leg ports.GRPCLeg) (ports.GRPCStream, error) {
	w := leg.Worker.Worker
	switch w.Runtime {
	case worker.RuntimeSGLang:
		c, err := p.SGLang(w)
		if err != nil {
			return nil, err
		}
		req := sglangRequest(leg)
		return open(ctx, func(c2 context.Context) (grpc.ServerStreamingClient[sglangpb.GenerateResponse], error) {
			return c.Generate(c2, req)
		}, sglangEvent)
	case worker.RuntimeTokenSpeed:
		c, err := p.TokenSpeed(w)
		if err != nil {
			return nil, err
		}
		req := tokenspeedRequest(leg)
		return open(ctx, func(c2 context.Context) (grpc.ServerStreamingClient[tokenspeedpb.GenerateResponse], error) {
			return c.Generate(c2, req)
		}, tokenspeedEvent)
	case worker.RuntimeVLLM:
		c, err := p.VLLM(w)
		if err != nil {
			return nil, err
		}
		req := vllmRequest(leg)
		return open(ctx, func(c2 context.Context) (grpc.ServerStreamingClient[vllmpb.GenerateResponse], error) {
			return c.Generate(c2, req)
		}, vllmEvent)
	}
	return nil, fmt.Errorf("grpcengine: runtime %q has no Generate service", w.Runtime)
}

func f32(p *float32, def float32) float32 {
	if p == nil {
		return def
	}
	return *p
}

// sglangRequest builds an SGLang GenerateRequest. SGLang's sampling fields are not
// optional, so unset values take the engine's defaults (temperature 1, top_p 1, top_k −1,
// repetition_penalty 1).
func sglangRequest(leg ports.GRPCLeg) *sglangpb.GenerateRequest {
	s := leg.Sampling
	topK := int32(-1)
	if s.TopK != nil {
		topK = *s.TopK
	}
	req := &sglangpb.GenerateRequest{
		RequestId: leg.RequestID,
		Tokenized: &sglangpb.TokenizedInput{OriginalText: leg.Text, InputIds: leg.InputIDs},
		SamplingParams: &sglangpb.SamplingParams{Temperature: f32(s.Temperature, 1), TopP: f32(s.TopP, 1), TopK: topK,
			MinP: f32(s.MinP, 0), FrequencyPenalty: f32(s.FrequencyPenalty, 0), PresencePenalty: f32(s.PresencePenalty, 0),
			RepetitionPenalty: f32(s.RepetitionPenalty, 1), MaxNewTokens: s.MaxTokens, Stop: s.Stop, StopTokenIds: s.StopTokenIDs,
			SkipSpecialTokens: s.SkipSpecialTokens, N: s.N, MinNewTokens: s.MinTokens, IgnoreEos: s.IgnoreEOS, NoStopTrim: s.NoTrim},
		Stream: leg.Stream,
	}
	if r := leg.Rendezvous; r != nil {
		req.DisaggregatedParams = &sglangpb.DisaggregatedParams{BootstrapHost: r.Host, BootstrapPort: int32(r.Port), BootstrapRoom: int32(r.Room)}
	}
	if leg.DPRank != nil {
		req.DataParallelRank = int32(*leg.DPRank)
	}
	req.MmInputs = sglangMM(leg.MM)
	if leg.Logprobs || leg.PromptLogprobs {
		req.ReturnLogprob, req.TopLogprobsNum, req.LogprobStartLen = true, int32(leg.TopLogprobs), -1
		if leg.PromptLogprobs {
			req.LogprobStartLen = 0
		}
	}
	return req
}

func u32(p *uint32) *uint32 { return p }

func sglangEvent(m *sglangpb.GenerateResponse) ports.GRPCEvent {
	if c := m.GetComplete(); c != nil {
		ev := ports.GRPCEvent{Complete: true, Index: int(c.GetIndex()), IDs: c.GetOutputIds(), Finish: c.GetFinishReason(),
			PromptTokens: int(c.GetPromptTokens()), CompletionTokens: int(c.GetCompletionTokens()), CachedTokens: int(c.GetCachedTokens())}
		switch ms := c.GetMatchedStop().(type) {
		case *sglangpb.GenerateComplete_MatchedTokenId:
			id := ms.MatchedTokenId
			ev.MatchedTokenID = &id
		case *sglangpb.GenerateComplete_MatchedStopStr:
			st := ms.MatchedStopStr
			ev.MatchedStop = &st
		}
		ev.Logprobs = outputLogprobs(c.GetOutputLogprobs())
		ev.PromptLogprobs = promptLogprobs(c.GetInputLogprobs())
		return ev
	}
	c := m.GetChunk()
	return ports.GRPCEvent{Index: int(c.GetIndex()), IDs: c.GetTokenIds(), PromptTokens: int(c.GetPromptTokens()),
		CompletionTokens: int(c.GetCompletionTokens()), CachedTokens: int(c.GetCachedTokens()), Logprobs: outputLogprobs(c.GetOutputLogprobs()),
		PromptLogprobs: promptLogprobs(c.GetInputLogprobs())}
}

// tokenspeedRequest builds a TokenSpeed GenerateRequest (kv_bootstrap_info=11,
// sampling_seed=23; grpc.md §1.1); data_parallel_rank=12 when the leg is pinned (the
// pipeline pins only an attention-DP prefill, to the rank its room's residue names:
// TokenSpeed places by bootstrap_room % dp_size and ignores a conflicting pin).
func tokenspeedRequest(leg ports.GRPCLeg) *tokenspeedpb.GenerateRequest {
	s := leg.Sampling
	sp := &tokenspeedpb.SamplingParams{Temperature: s.Temperature, TopP: s.TopP, TopK: s.TopK, MinP: s.MinP,
		FrequencyPenalty: s.FrequencyPenalty, PresencePenalty: s.PresencePenalty, RepetitionPenalty: s.RepetitionPenalty,
		MaxNewTokens: s.MaxTokens, MinNewTokens: s.MinTokens, Stop: s.Stop, StopTokenIds: s.StopTokenIDs, IgnoreEos: s.IgnoreEOS,
		SkipSpecialTokens: s.SkipSpecialTokens, N: s.N, NoStopTrim: s.NoTrim}
	if s.Seed != nil {
		seed := uint64(*s.Seed)
		sp.SamplingSeed = &seed
	}
	req := &tokenspeedpb.GenerateRequest{RequestId: leg.RequestID,
		Tokenized: &tokenspeedpb.TokenizedInput{OriginalText: leg.Text, InputIds: leg.InputIDs}, SamplingParams: sp, Stream: leg.Stream}
	if r := leg.Rendezvous; r != nil {
		req.KvBootstrapInfo = &tokenspeedpb.KvBootstrapInfo{BootstrapHost: r.Host, BootstrapPort: int32(r.Port), BootstrapRoom: r.Room}
	}
	req.MmInputs = tokenspeedMM(leg.MM)
	if leg.DPRank != nil {
		r := int32(*leg.DPRank)
		req.DataParallelRank = &r
	}
	if leg.Logprobs || leg.PromptLogprobs {
		start := int32(-1)
		if leg.PromptLogprobs {
			start = 0
		}
		req.ReturnLogprob, req.TopLogprobsNum, req.LogprobStartLen = true, int32(leg.TopLogprobs), &start
	}
	req.EncodeBootstrapInfo = tokenspeedEncodeInfo(leg.EncodeItems)
	return req
}

func tokenspeedEvent(m *tokenspeedpb.GenerateResponse) ports.GRPCEvent {
	if c := m.GetComplete(); c != nil {
		ev := ports.GRPCEvent{Complete: true, Index: int(c.GetIndex()), IDs: c.GetOutputIds(), Finish: c.GetFinishReason(),
			PromptTokens: int(c.GetPromptTokens()), CompletionTokens: int(c.GetCompletionTokens()), CachedTokens: int(c.GetCachedTokens())}
		switch ms := c.GetMatchedStop().(type) {
		case *tokenspeedpb.GenerateComplete_MatchedTokenId:
			id := ms.MatchedTokenId
			ev.MatchedTokenID = &id
		case *tokenspeedpb.GenerateComplete_MatchedStopStr:
			st := ms.MatchedStopStr
			ev.MatchedStop = &st
		}
		ev.Logprobs = outputLogprobs(c.GetOutputLogprobs())
		return ev
	}
	c := m.GetChunk()
	return ports.GRPCEvent{Index: int(c.GetIndex()), IDs: c.GetTokenIds(), PromptTokens: int(c.GetPromptTokens()),
		CompletionTokens: int(c.GetCompletionTokens()), CachedTokens: int(c.GetCachedTokens()), Logprobs: outputLogprobs(c.GetOutputLogprobs())}
}

// vllmRequest builds a vLLM GenerateRequest (kv_transfer_params_json=8 preferred, the legacy
// typed kv_transfer_params=6 when only a host/port is known; grpc.md §1.9).
func vllmRequest(leg ports.GRPCLeg) *vllmpb.GenerateRequest {
	s := leg.Sampling
	sp := &vllmpb.SamplingParams{Temperature: s.Temperature, TopP: f32(s.TopP, 1), MinP: f32(s.MinP, 0),
		FrequencyPenalty: f32(s.FrequencyPenalty, 0), PresencePenalty: f32(s.PresencePenalty, 0), RepetitionPenalty: f32(s.RepetitionPenalty, 1),
		MaxTokens: u32(s.MaxTokens), MinTokens: s.MinTokens, Stop: s.Stop, StopTokenIds: s.StopTokenIDs,
		SkipSpecialTokens: s.SkipSpecialTokens, IgnoreEos: s.IgnoreEOS, N: s.N}
	if s.TopK != nil && *s.TopK > 0 {
		sp.TopK = uint32(*s.TopK)
	}
	if s.Seed != nil {
		seed := int32(*s.Seed)
		sp.Seed = &seed
	}
	if leg.Logprobs {
		k := int32(leg.TopLogprobs)
		sp.Logprobs = &k
	}
	if leg.PromptLogprobs {
		k := int32(leg.TopLogprobs)
		sp.PromptLogprobs = &k
	}
	req := &vllmpb.GenerateRequest{RequestId: leg.RequestID,
		Input:          &vllmpb.GenerateRequest_Tokenized{Tokenized: &vllmpb.TokenizedInput{OriginalText: leg.Text, InputIds: leg.InputIDs}},
		SamplingParams: sp, Stream: leg.Stream}
	if leg.KVTransferJSON != "" {
		js := leg.KVTransferJSON
		req.KvTransferParamsJson = &js
	} else if leg.KVPort > 0 {
		req.KvTransferParams = &vllmpb.KvTransferParams{RemoteHost: leg.KVHost, RemotePort: uint32(leg.KVPort)}
	}
	if leg.DPRank != nil {
		r := int32(*leg.DPRank)
		req.DataParallelRank = &r
	}
	vllmMM(req, leg.MM)
	return req
}

func vllmEvent(m *vllmpb.GenerateResponse) ports.GRPCEvent {
	if c := m.GetComplete(); c != nil {
		ev := ports.GRPCEvent{Complete: true, Index: int(c.GetIndex()), IDs: c.GetOutputIds(), Finish: c.GetFinishReason(),
			PromptTokens: int(c.GetPromptTokens()), CompletionTokens: int(c.GetCompletionTokens()), CachedTokens: int(c.GetCachedTokens())}
		switch ms := c.GetMatchedStop().(type) {
		case *vllmpb.GenerateComplete_MatchedTokenId:
			id := ms.MatchedTokenId
			ev.MatchedTokenID = &id
		case *vllmpb.GenerateComplete_MatchedStopStr:
			st := ms.MatchedStopStr
			ev.MatchedStop = &st
		}
		switch {
		case c.KvTransferParamsJson != nil:
			ev.KVTransferJSON = c.GetKvTransferParamsJson()
		case c.GetKvTransferParams() != nil && c.GetKvTransferParams().GetRemotePort() > 0:
			b, _ := json.Marshal(map[string]any{"remote_host": c.GetKvTransferParams().GetRemoteHost(), "remote_port": c.GetKvTransferParams().GetRemotePort()})
			ev.KVTransferJSON = string(b)
		}
		ev.MediaIdentity = vllmIdentity(c.GetMediaIdentity())
		ev.Logprobs = outputLogprobs(c.GetOutputLogprobs())
		ev.PromptLogprobs = promptLogprobs(c.GetInputLogprobs())
		return ev
	}
	c := m.GetChunk()
	return ports.GRPCEvent{Index: int(c.GetIndex()), IDs: c.GetTokenIds(), PromptTokens: int(c.GetPromptTokens()),
		CompletionTokens: int(c.GetCompletionTokens()), CachedTokens: int(c.GetCachedTokens()), Logprobs: outputLogprobs(c.GetOutputLogprobs())}
}
