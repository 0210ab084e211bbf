package grpcsim

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/wire"
)

// genRequest is a Generate request in engine-neutral form.
type genRequest struct {
	id        string
	ids       []uint32
	maxTokens int // < 0 = Config.DefaultMaxTokens
	n         int // samples (SamplingParams.n); 0 = 1
	stream    bool
	stopIDs   []uint32

	// SGLang disaggregated_params / TokenSpeed kv_bootstrap_info.
	hasRoom  bool
	bootHost string
	bootPort int
	room     int64

	// logprobs asks for output logprobs with topLogprobs alternatives per token.
	logprobs    bool
	topLogprobs int
	// promptLogprobs asks for the prompt's logprobs (on the complete: SGLang, vLLM).
	promptLogprobs bool

	// dpRank is the leg's data_parallel_rank pin; nil = none (SGLang's is not optional: 0
	// counts as rank 0).
	dpRank *int

	// vLLM kv_transfer_params (from the JSON field or the legacy typed one); nil = none.
	kvParams map[string]any

	// mm is the request's multimodal input; nil = text only.
	mm *mmInput
	// TokenSpeed mm_inputs items and the EPD encode_bootstrap_info entries (encode.go).
	media  []mediaItem
	encode []encodeRef
}

// event is one message of the response stream in engine-neutral form.
type event struct {
	malformed bool // neither chunk nor complete (the malformed fault)
	complete  bool
	index     uint32 // the sample (n > 1)

	ids                                          []uint32 // chunk delta, or complete output_ids
	promptTokens, completionTokens, cachedTokens uint32
	finish                                       string
	matchedToken                                 *uint32
	kvParamsJSON                                 *string
	// lpFrom is the output position of ids[0] (for the deterministic logprobs).
	lpFrom   int
	identity *vllmpb.MediaIdentity // a vLLM prefill's media_identity
}

type sender func(event) error

// handoffResult is what the handoff step decided: where the prompt's KV came from, how many
// prompt tokens were cached, what a vLLM prefill returns, and whether the leg is a PD
// prefill (which generates one token).
type handoffResult struct {
	source       byte // 'k' handoff, 'r' computed here
	cached       int
	kvParamsJSON *string
	pdPrefill    bool
	mix          uint64 // the media digest the tokens derive from (the prefill's, through the KV)
}

// generate runs one Generate RPC: counters, faults, validation, the handoff for the role,
// then the token stream. It returns a gRPC status error, never an in-band error.
func (s *Server) generate(ctx context.Context, req genRequest, send sender) error {
	s.c.requests.Add(1)
	canary := strings.HasPrefix(req.id, wire.CanaryRequestIDPrefix)
	if canary {
		s.c.canary.Add(1)
	}
	if !canary && decodeOnlyShape(s.cfg.Engine, req) {
		switch s.cfg.Role {
		case RoleDecode:
			s.c.decodeOnly.Add(1)
		case RolePrefill:
			s.c.prefillOnly.Add(1)
		}
	}
	s.c.enter()
	defer s.c.running.Add(-1)
	err := s.run(ctx, req, send)
	if errors.Is(err, errAbortRPC) { // an Abort RPC ended it before any token: finish "abort"
		err = send(event{complete: true, finish: "abort", promptTokens: uint32(len(req.ids))})
	}
	if err != nil && ctx.Err() == nil { // a cancelled or expired RPC got no answer: aborted only
		s.c.errors.Add(1)
	}
	return err
}

func (s *Server) run(parent context.Context, req genRequest, send sender) error {
	md, _ := metadata.FromIncomingContext(parent)
	faults, err := requestFaults(md, s.cfg.Role, append(append([]Fault(nil), s.faults...), s.liveFaults()...))
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	if req.id != "" {
		defer s.track(req.id, cancel)()
	}

	dieAfter, malformed, oov := -1, false, false
	var kf kvFaults
	for _, f := range faults {
		switch f.Kind {
		case FaultSlowFirstByte:
			if err := s.sleep(ctx, time.Duration(f.Arg)*time.Millisecond); err != nil {
				return err
			}
		case FaultStatus:
			return status.Errorf(codeForHTTP(f.Arg), "injected fault: status %d", f.Arg)
		case FaultSidecarTimeout:
			return status.Error(codes.Unavailable, "sidecar_timeout: injected fault: the engine sidecar did not answer in time")
		case FaultReset:
			s.resetConn(ctx)
			return status.Error(codes.Unavailable, "injected fault: connection reset")
		case FaultHang:
			if err := s.sleep(ctx, s.cfg.HangMax); err != nil {
				return err
			}
			return status.Error(codes.Unavailable, "injected fault: hang ended")
		case FaultDelayBody:
			_ = grpc.SendHeader(ctx, metadata.MD{})
			if err := s.sleep(ctx, time.Duration(f.Arg)*time.Millisecond); err != nil {
				return err
			}
		case FaultDieAfter:
			dieAfter = f.Arg
		case FaultMalformed:
			malformed = true
		case FaultNoKVParams:
			kf.none = true
		case FaultKVLost:
			kf.lost = true
		case FaultOOVTokens:
			oov = true
		}
	}

	if len(req.ids) == 0 {
		return status.Error(codes.InvalidArgument, "input_ids must not be empty")
	}
	if len(req.ids) > s.cfg.MaxModelLen {
		return status.Errorf(codes.InvalidArgument, "the prompt has %d tokens, more than the context length %d", len(req.ids), s.cfg.MaxModelLen)
	}
	if malformed {
		return send(event{malformed: true})
	}
	if err := s.checkDPRank(req); err != nil {
		return err
	}
	if err := s.checkMM(&req); err != nil {
		return err
	}
	if err := s.embeddings(ctx, &req); err != nil {
		return err
	}

	w := &work{}
	defer s.finish(w)
	h, err := s.handoff(ctx, req, kf, func() error { return s.admit(ctx, req, false, w) })
	if err != nil {
		return err
	}
	if h.source == 'r' {
		h.mix = req.mm.mix()
	}
	if !w.admitted {
		if err := s.admit(ctx, req, h.source == 'k', w); err != nil {
			return err
		}
	}
	cached := w.cached

	n := req.maxTokens
	if n < 0 {
		n = s.cfg.DefaultMaxTokens
	}
	if h.pdPrefill {
		n = 1
	}
	return s.stream(ctx, req, h, n, cached, dieAfter, oov, send)
}

// stream generates n tokens for each of req.n samples (index 0 is [HandoffTokens] or
// [RecomputeTokens]; sample i > 0 is [SampleTokens]) and sends them: with stream=true one
// delta chunk per token per sample, samples interleaved step by step, then a complete per
// sample repeating its final delta; with stream=false one complete per sample with all its
// ids. Counts are cumulative per sample. An Abort RPC ends every sample with "abort". oov
// replaces every token id with OOVTokenID (the oov-tokens fault).
func (s *Server) stream(ctx context.Context, req genRequest, h handoffResult, n, cached, dieAfter int, oov bool, send sender) error {
	samples := max(req.n, 1)
	toks := make([][]uint32, samples)
	for i := range toks {
		toks[i] = sampleTokens(req.ids, h.mix, h.source == 'k', i, n)
		if oov {
			for j := range toks[i] {
				toks[i][j] = OOVTokenID
			}
		}
	}
	outs := make([][]uint32, samples)
	finish := make([]string, samples)
	matched := make([]*uint32, samples)
	ev := func(i int) event {
		return event{index: uint32(i), promptTokens: uint32(len(req.ids)), cachedTokens: uint32(cached),
			completionTokens: uint32(len(outs[i]))}
	}
	live := samples
	for j := 0; j < n && live > 0; j++ {
		if itl := s.itl(); j > 0 || itl > 0 {
			if err := s.sleep(ctx, itl); err != nil {
				if !errors.Is(context.Cause(ctx), errAbortRPC) {
					return err
				}
				for i := range finish {
					if finish[i] == "" {
						finish[i] = "abort"
					}
				}
				break
			}
		}
		if dieAfter >= 0 && j == dieAfter {
			// Let the chunks already sent leave the transport's buffers, then cut the line.
			_ = s.sleep(ctx, 100*time.Millisecond)
			s.resetConn(ctx)
			return status.Error(codes.Unavailable, "injected fault: died mid-stream")
		}
		for i := range toks {
			if finish[i] != "" {
				continue
			}
			t := toks[i][j]
			outs[i] = append(outs[i], t)
			s.c.genTokens.Add(1)
			if slices.Contains(req.stopIDs, t) {
				finish[i], matched[i] = "stop", &toks[i][j]
				live--
			}
			if req.stream {
				e := ev(i)
				e.ids, e.lpFrom = []uint32{t}, j
				if err := send(e); err != nil {
					return err
				}
			}
		}
	}
	for i := range toks {
		e := ev(i)
		e.complete, e.finish, e.matchedToken, e.kvParamsJSON = true, finish[i], matched[i], h.kvParamsJSON
		if req.mm != nil {
			e.identity = req.mm.identity
		}
		if e.finish == "" {
			e.finish = "length"
		}
		e.ids = outs[i]
		if req.stream && len(outs[i]) > 0 {
			e.ids = outs[i][len(outs[i])-1:] // streaming: the complete repeats the final delta (grpc.md §3.1)
			e.lpFrom = len(outs[i]) - 1
		}
		if err := send(e); err != nil {
			return err
		}
	}
	return nil
}

// sleep waits d or until ctx ends; a cancelled RPC counts as aborted and gives CANCELLED,
// an Abort RPC gives an error wrapping errAbortRPC (the stream then ends with finish "abort").
func (s *Server) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		if ctx.Err() != nil {
			return s.cancelled(ctx)
		}
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return s.cancelled(ctx)
	}
}

// cancelled records an abort (RPC cancellation or Abort RPC) and returns the status.
func (s *Server) cancelled(ctx context.Context) error {
	s.c.aborted.Add(1)
	s.c.lastAbort.Store(time.Now().UnixMilli())
	if errors.Is(context.Cause(ctx), errAbortRPC) {
		return fmt.Errorf("%w", errAbortRPC)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return status.Error(codes.DeadlineExceeded, "the request's deadline passed")
	}
	return status.Error(codes.Canceled, "request cancelled by the client")
}
