package grpcsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/smg-go/smg/domain/wire"
)

var blockSeq atomic.Int64

// handoff performs the role's side of the KV handoff (grpc.md §3.5 items 1 and 3):
//
//   - SGLang/TokenSpeed prefill with a room: registers the room on its side channel and
//     waits (HandoffTimeout) until the decode takes the KV; when none does, INTERNAL
//     "KVTransferError(bootstrap_room=<room>): Request <room> timed out after <s> in
//     KVPoll.Bootstrapping", as the engine's scheduler aborts it with status 500
//     (engines.md §2.4, grpc.md §3.2).
//   - SGLang/TokenSpeed decode with a room: claims it at bootstrap_host:bootstrap_port;
//     when the room never appears within HandoffTimeout (a hung or wrong prefill), INTERNAL
//     "KVTransferError(…): Request <room> timed out after <s> in KVPoll.WaitingForInput";
//     a room carrying another prompt is a plain INTERNAL. Without a room it recomputes
//     (counted).
//   - TokenSpeed with DPSize > 1: a leg lands on rank room % DPSize (counted), as the
//     engine places it; a prefill leg pinned to another rank is INVALID_ARGUMENT (the
//     engine would place it elsewhere: the gateway minted a wrong room).
//   - vLLM prefill with do_remote_decode: NIXL keeps blocks and returns engine-shaped
//     kv_transfer_params; Mooncake keeps the KV under transfer_id and returns nothing.
//   - vLLM decode with do_remote_prefill: pulls (NIXL) or fetches (Mooncake) the KV;
//     incomplete or absent params recompute (counted).
//
// A prefill runs compute (the prompt's KV-cache lease, slot and prefill time) before it
// registers its KV, so a decode never receives KV that is not computed yet.
func (s *Server) handoff(ctx context.Context, req genRequest, kf kvFaults, compute func() error) (handoffResult, error) {
	local := handoffResult{source: 'r'}
	if s.cfg.Engine == EngineVLLM {
		return s.vllmHandoff(ctx, req, kf, compute)
	}
	if req.hasRoom && req.bootHost == wire.FakeBootstrapHost {
		return local, nil // SGLang's warmup form: a fake KV sender or receiver, no peer
	}
	if !req.hasRoom {
		if s.cfg.Role == RoleDecode {
			s.c.recomputed.Add(1)
		}
		return local, nil
	}
	if s.cfg.Engine == EngineTokenSpeed && s.cfg.DPSize > 1 {
		// TokenSpeed's DP controller places every disaggregated leg on rank
		// room % dp_size (data_parallel_controller.py round_robin_scheduler), whatever pin it
		// carries; only a prefill pin the room contradicts is refused here, to catch a
		// gateway that minted the room for another rank.
		if r := int(req.room % int64(s.cfg.DPSize)); req.dpRank != nil && s.cfg.Role == RolePrefill && r != *req.dpRank {
			return local, status.Errorf(codes.InvalidArgument,
				"bootstrap_room %d maps to dp rank %d (room %% dp_size %d), but this leg is for rank %d", req.room, r, s.cfg.DPSize, *req.dpRank)
		}
		s.c.dpRanks[int(req.room%int64(s.cfg.DPSize))%maxDPSize].Add(1)
	}
	key := "room:" + strconv.FormatInt(req.room, 10)
	switch s.cfg.Role {
	case RolePrefill:
		if err := compute(); err != nil {
			return local, err
		}
		sl, err := s.kv.put(key, kvPayload{Digest: Digest(req.ids), PromptTokens: len(req.ids), EngineID: s.engineID(), MM: req.mm.mix()})
		if err != nil {
			s.c.duplicate.Add(1)
			return local, status.Errorf(codes.InvalidArgument, "bootstrap_room %d is already in use", req.room)
		}
		t := time.NewTimer(s.cfg.HandoffTimeout)
		defer t.Stop()
		select {
		case <-sl.taken:
		case <-t.C:
		case <-ctx.Done():
		}
		if !s.kv.drop(key, sl) {
			if ctx.Err() != nil {
				return local, s.cancelled(ctx)
			}
			s.c.unmatched.Add(1)
			return local, kvTransferError(req.room, "Request %d timed out after %s in KVPoll.Bootstrapping", req.room, secs(s.cfg.HandoffTimeout))
		}
		return handoffResult{source: 'r', pdPrefill: true}, nil
	default:
		base := "http://" + net.JoinHostPort(strings.Trim(req.bootHost, "[]"), strconv.Itoa(req.bootPort))
		return s.receive(ctx, req, base, key, "")
	}
}

// receive is a decode taking the KV under key from the prefill's side channel at base.
func (s *Server) receive(ctx context.Context, req genRequest, base, key, engineID string) (handoffResult, error) {
	fctx, cancel := context.WithTimeout(ctx, s.cfg.HandoffTimeout)
	defer cancel()
	p, err := s.fetchKV(fctx, base, key, engineID)
	if err != nil {
		if ctx.Err() != nil {
			return handoffResult{}, s.cancelled(ctx)
		}
		s.c.unmatched.Add(1)
		if room, ok := strings.CutPrefix(key, "room:"); ok {
			return handoffResult{}, kvTransferError(req.room, "Request %s timed out after %s in KVPoll.WaitingForInput (bootstrap server %s: %v)", room, secs(s.cfg.HandoffTimeout), base, err)
		}
		return handoffResult{}, status.Errorf(codes.Internal, "KV transfer failed for %s from %s: %v", key, base, err)
	}
	if p.Digest != Digest(req.ids) || p.PromptTokens != len(req.ids) {
		return handoffResult{}, status.Errorf(codes.Internal, "KV transfer for %s carries another prompt (%d tokens, this request has %d)", key, p.PromptTokens, len(req.ids))
	}
	s.c.received.Add(1)
	return handoffResult{source: 'k', cached: len(req.ids), mix: p.MM}, nil
}

// kvFaults are a vLLM leg's handoff faults: on a prefill none returns no params and keeps no
// KV (FaultNoKVParams), on a decode it drops the params it was given and recomputes; lost
// makes a prefill return NIXL params and keep no KV (FaultKVLost).
type kvFaults struct{ none, lost bool }

func (s *Server) vllmHandoff(ctx context.Context, req genRequest, kf kvFaults, compute func() error) (handoffResult, error) {
	local := handoffResult{source: 'r'}
	p := req.kvParams
	switch s.cfg.Role {
	case RolePrefill:
		if !truthy(p["do_remote_decode"]) {
			return local, nil
		}
		local.pdPrefill = true
		if err := compute(); err != nil {
			return local, err
		}
		if kf.none {
			return local, nil
		}
		payload := kvPayload{Digest: Digest(req.ids), PromptTokens: len(req.ids), EngineID: s.legEngineID(req), MM: req.mm.mix()}
		switch s.cfg.transport() {
		case "nixl":
			// Engine-shaped params (engines.md §3.1): one block list per KV-cache group and
			// the prefill's internal request id, which names the blocks to pull.
			seq := blockSeq.Add(1)
			rid := fmt.Sprintf("%s-p%d", req.id, seq)
			if !kf.lost {
				if err := s.keep("nixl:"+rid, payload); err != nil {
					return local, err
				}
			}
			blocks := make([]int64, 0, 4)
			for i := range int64(max(1, (len(req.ids)+s.cfg.PageSize-1)/s.cfg.PageSize)) {
				blocks = append(blocks, seq*1000+i)
			}
			out, _ := json.Marshal(map[string]any{
				"do_remote_prefill": true, "do_remote_decode": false,
				"remote_block_ids": [][]int64{blocks}, "remote_engine_id": s.legEngineID(req),
				"remote_request_id": rid, "remote_host": s.cfg.Host, "remote_port": s.BootstrapPort(), "tp_size": 1,
			})
			js := string(out)
			local.kvParamsJSON = &js
		case "mooncake":
			if tid, _ := p["transfer_id"].(string); tid != "" {
				if err := s.keep("mc:"+tid, payload); err != nil {
					return local, err
				}
			}
		}
		return local, nil
	default:
		if kf.none || !truthy(p["do_remote_prefill"]) { // kf.none: the decode drops the handoff it was given
			s.c.recomputed.Add(1)
			return local, nil
		}
		host, _ := p["remote_host"].(string)
		port, _ := p["remote_port"].(float64)
		blocks, _ := p["remote_block_ids"].([]any)
		rid, _ := p["remote_request_id"].(string)
		tid, _ := p["transfer_id"].(string)
		addr, _ := p["remote_bootstrap_addr"].(string)
		engine, _ := p["remote_engine_id"].(string)
		switch {
		// vLLM pulls only with do_remote_prefill and every one of remote_block_ids,
		// remote_engine_id, remote_request_id, remote_host, remote_port (engines.md §3.1).
		case s.cfg.transport() == "nixl" && host != "" && port > 0 && len(blocks) > 0 && rid != "" && engine != "":
			return s.receive(ctx, req, "http://"+net.JoinHostPort(host, strconv.Itoa(int(port))), "nixl:"+rid, engine)
		case s.cfg.transport() == "mooncake" && tid != "" && addr != "" && engine != "":
			return s.receive(ctx, req, addr, "mc:"+tid, engine)
		}
		s.c.recomputed.Add(1) // vLLM: "Got invalid KVTransferParams", the prompt is recomputed
		return local, nil
	}
}

// keep stores a vLLM prefill's KV (or an encode worker's embedding) for its taker and
// drops it after HandoffTimeout (the NIXL lease, the Mooncake transfer deadline),
// counting it unmatched when never taken.
func (s *Server) keep(key string, p kvPayload) error {
	sl, err := s.kv.put(key, p)
	if errors.Is(err, errDuplicate) {
		s.c.duplicate.Add(1)
		return status.Errorf(codes.InvalidArgument, "KV transfer key %s is already in use", strings.SplitN(key, ":", 2)[1])
	}
	s.serve(func() {
		t := time.NewTimer(s.cfg.HandoffTimeout)
		defer t.Stop()
		select {
		case <-sl.taken:
		case <-s.done:
		case <-t.C:
			// Counted as the key goes: PendingHandoffs 0 means the expiry is counted.
			s.kv.expire(key, sl, func() { s.c.unmatched.Add(1) })
		}
	})
	return nil
}

func truthy(v any) bool {
	b, _ := v.(bool)
	return b
}

// parseKVParams applies the vLLM servicer's rules (grpc.md §1.9): the JSON field is
// preferred and must be a JSON object; otherwise the legacy typed field needs a host and a
// port in 1..65535 and becomes {"remote_host", "remote_port"}. Both absent: nil.
func parseKVParams(js *string, legacyHost string, legacyPort uint32, hasLegacy bool) (map[string]any, error) {
	if js != nil {
		var m map[string]any
		if err := json.Unmarshal([]byte(*js), &m); err != nil || m == nil {
			return nil, status.Error(codes.InvalidArgument, "kv_transfer_params_json must be a JSON object")
		}
		return m, nil
	}
	if !hasLegacy {
		return nil, nil
	}
	if legacyHost == "" || legacyPort < 1 || legacyPort > 65535 {
		return nil, status.Error(codes.InvalidArgument, "kv_transfer_params needs remote_host and a remote_port in 1..65535")
	}
	return map[string]any{"remote_host": legacyHost, "remote_port": float64(legacyPort)}, nil
}

// kvTransferError is an SGLang/TokenSpeed KV handoff failure as the engine reports it over
// gRPC: the scheduler aborts the request with status 500, which the servicer raises as
// INTERNAL (grpc.md §3.2), with the KVTransferError message of engines.md §2.4.
func kvTransferError(room int64, format string, a ...any) error {
	return status.Error(codes.Internal, fmt.Sprintf("KVTransferError(bootstrap_room=%d): ", room)+fmt.Sprintf(format, a...))
}

// secs renders d as the engine does in its timeout messages ("0.3s", "300.0s" is "300s").
func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }
