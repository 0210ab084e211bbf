package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/smg-go/smg/domain/wire"
)

// vLLM PD handoff (engines.md §3.1, §3.3; seed "Connector Modes").
//
// NIXL: a prefill leg tagged {"do_remote_decode":true} keeps the prompt's KV blocks and
// returns nixlParams; a decode carrying them pulls the blocks from remote_host:remote_port.
// Mooncake: a tagged prefill leg pushes the KV to its bootstrap listener under transfer_id
// (falling back to X-Request-Id) and returns no params; the decode fetches it from
// remote_bootstrap_addr, naming remote_engine_id. A decode whose params are absent or
// incomplete computes the prompt locally and counts in recomputed_prompts.

// nixlParams is the kv_transfer_params a NIXL prefill returns, shaped like vLLM's
// NixlConnector request_finished() (remote_block_ids: one list per KV-cache group).
type nixlParams struct {
	DoRemotePrefill bool      `json:"do_remote_prefill"`
	DoRemoteDecode  bool      `json:"do_remote_decode"`
	RemoteEngineID  string    `json:"remote_engine_id"`
	RemoteBlockIDs  [][]int64 `json:"remote_block_ids"`
	RemoteHost      string    `json:"remote_host"`
	RemotePort      int       `json:"remote_port"`
	RemoteRequestID string    `json:"remote_request_id"`
	TPSize          int       `json:"tp_size"`
}

// kvParams decodes kv_transfer_params: nil when absent or null; a 400 when not an object.
func kvParams(raw json.RawMessage) (map[string]json.RawMessage, *reqError) {
	if isNull(raw) {
		return nil, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, badRequest("%s must be an object: %v", wire.FieldKVTransferParams, err)
	}
	return m, nil
}

func isTrue(m map[string]json.RawMessage, k string) bool { return string(m[k]) == "true" }

// present reports whether every key is in m and not null.
func present(m map[string]json.RawMessage, keys ...string) bool {
	for _, k := range keys {
		if isNull(m[k]) {
			return false
		}
	}
	return true
}

func invalidKV(key string, raw json.RawMessage) *reqError {
	return &reqError{status: http.StatusBadRequest, param: wire.FieldKVTransferParams,
		msg: "Invalid kv_transfer_params: " + key + " has the wrong type: " + string(raw)}
}

func getString(m map[string]json.RawMessage, k string) (string, *reqError) {
	var s string
	if err := json.Unmarshal(m[k], &s); err != nil {
		return "", invalidKV(k, m[k])
	}
	return s, nil
}

// flatBlocks accepts remote_block_ids as a list of lists (current vLLM) or a flat list
// (older releases) and returns the ids in order.
func flatBlocks(raw json.RawMessage) ([]int64, bool) {
	var ll [][]int64
	if err := json.Unmarshal(raw, &ll); err == nil {
		var out []int64
		for _, l := range ll {
			out = append(out, l...)
		}
		return out, true
	}
	var l []int64
	err := json.Unmarshal(raw, &l)
	return l, err == nil
}

func kvLoadFailure(format string, a ...any) *reqError {
	return &reqError{status: http.StatusInternalServerError, generation: true,
		msg: "KV transfer failed (kv_load_failure_policy=fail): " + fmt.Sprintf(format, a...)}
}

// vllmDecodeHandoff loads the KV named by the decode leg's kv_transfer_params into j's
// single item, or leaves it for a local recompute (counted) when the params are absent or
// incomplete.
func (s *Server) vllmDecodeHandoff(ctx context.Context, j *job, raw json.RawMessage) *reqError {
	m, e := kvParams(raw)
	if e != nil {
		return e
	}
	if s.cfg.KVConnector == ConnectorMoRIIO {
		return s.moriioDecode(ctx, j, m)
	}
	var method, target string
	var body []byte
	switch {
	case len(j.items) != 1 || m == nil || !isTrue(m, wire.KVDoRemotePrefill):
		return s.recompute(j)
	case s.cfg.KVConnector == ConnectorNixl:
		if !present(m, wire.KVRemoteBlockIDs, wire.KVRemoteEngineID, wire.KVRemoteRequestID, wire.KVRemoteHost, wire.KVRemotePort) {
			return s.recompute(j)
		}
		var pull nixlPull
		var port int
		var host string
		if pull.EngineID, e = getString(m, wire.KVRemoteEngineID); e != nil {
			return e
		}
		if pull.RequestID, e = getString(m, wire.KVRemoteRequestID); e != nil {
			return e
		}
		if host, e = getString(m, wire.KVRemoteHost); e != nil {
			return e
		}
		if err := json.Unmarshal(m[wire.KVRemotePort], &port); err != nil || port < 1 || port > 65535 {
			return invalidKV(wire.KVRemotePort, m[wire.KVRemotePort])
		}
		var ok bool
		if pull.BlockIDs, ok = flatBlocks(m[wire.KVRemoteBlockIDs]); !ok {
			return invalidKV(wire.KVRemoteBlockIDs, m[wire.KVRemoteBlockIDs])
		}
		body, _ = json.Marshal(pull)
		method, target = http.MethodPost, "http://"+net.JoinHostPort(host, strconv.Itoa(port))+"/sim/nixl/pull"
	default: // mooncake
		if !present(m, wire.KVTransferID, wire.KVRemoteEngineID, wire.KVRemoteBootstrapAddr) {
			return s.recompute(j)
		}
		id, e := getString(m, wire.KVTransferID)
		if e != nil {
			return e
		}
		engine, e := getString(m, wire.KVRemoteEngineID)
		if e != nil {
			return e
		}
		addr, e := getString(m, wire.KVRemoteBootstrapAddr)
		if e != nil {
			return e
		}
		u, err := url.Parse(addr)
		if err != nil || u.Scheme != "http" || u.Host == "" {
			return invalidKV(wire.KVRemoteBootstrapAddr, m[wire.KVRemoteBootstrapAddr])
		}
		method = http.MethodGet
		target = "http://" + u.Host + "/sim/mooncake/transfers/" + url.PathEscape(id) + "?engine_id=" + url.QueryEscape(engine)
	}
	p, f := s.sideCall(ctx, method, target, body, s.cfg.HandoffTimeout)
	if f != nil {
		switch {
		case f.gone:
			return errClientGone
		case f.timedOut:
			s.c.unmatched.Add(1)
			return kvLoadFailure("no KV from %s within %s", target, secs(s.cfg.HandoffTimeout))
		case f.status == 0:
			return kvLoadFailure("cannot reach %s: %s", target, f.msg)
		}
		return kvLoadFailure("%s answered %d: %s", target, f.status, f.msg)
	}
	it := &j.items[0]
	it.seed, it.cached, it.kvIn = handoffSeed(p.Digest), len(it.ids), true
	s.c.handoffsReceived.Add(1)
	return nil
}

// recompute counts a local compute of a client's prompt (a canary's is not a fallback).
func (s *Server) recompute(j *job) *reqError {
	if !j.canary {
		s.c.recomputed.Add(1)
	}
	return nil
}

// vllmPrefillTag reports whether a prefill leg asks for a remote decode and, for Mooncake,
// the transfer id it pushes under (kv_transfer_params.transfer_id, else X-Request-Id).
func (s *Server) vllmPrefillTag(j *job, raw json.RawMessage, r *http.Request) (tagged bool, transferID string, e *reqError) {
	m, e := kvParams(raw)
	if e != nil || m == nil || !isTrue(m, wire.KVDoRemoteDecode) || len(j.items) != 1 {
		return false, "", e
	}
	if s.cfg.KVConnector == ConnectorMooncake {
		if !isNull(m[wire.KVTransferID]) {
			if transferID, e = getString(m, wire.KVTransferID); e != nil {
				return false, "", e
			}
		} else {
			transferID = r.Header.Get(wire.HeaderRequestID)
		}
		if transferID == "" {
			return false, "", nil
		}
	}
	return true, transferID, nil
}

// nixlRegister keeps the KV of j's item and returns the params for the response.
func (s *Server) nixlRegister(j *job, xrid string) *nixlParams {
	it := &j.items[0]
	if xrid == "" {
		xrid = strconv.FormatUint(s.seq.Add(1), 36)
	}
	reqID := "cmpl-" + xrid + "-" + strconv.FormatUint(s.seq.Add(1), 10)
	p := kvPayload{Digest: it.digest, PromptTokens: len(it.ids), EngineID: s.cfg.EngineID}
	blocks := s.nixl.put(reqID, p, s.cfg.HandoffTimeout, func() { s.c.unmatched.Add(1) })
	return &nixlParams{DoRemotePrefill: true, RemoteEngineID: s.cfg.EngineID, RemoteBlockIDs: [][]int64{blocks},
		RemoteHost: s.cfg.Host, RemotePort: s.port, RemoteRequestID: reqID, TPSize: 1}
}

// mooncakeLease waits, in the background, for a decode to fetch a pushed transfer; it
// counts unmatched_rooms when no decode came within the handoff timeout (serveClaim counts
// handoffs_sent as the KV goes out).
func (s *Server) mooncakeLease(sl *slot) {
	defer s.wg.Done()
	timer := time.NewTimer(s.cfg.HandoffTimeout)
	defer timer.Stop()
	expired := false
	select {
	case <-sl.got:
	case <-sl.dLeft:
	case <-timer.C:
		expired = true
	case <-s.ctx.Done():
	}
	var unmatched func()
	if expired {
		unmatched = func() { s.c.unmatched.Add(1) }
	}
	s.rv.leaveCounting(sl, sideP, unmatched)
}

// serveTransfer is GET /sim/mooncake/transfers/{id}?engine_id=E on a Mooncake prefill's
// bootstrap listener: 400 when E is not this engine, else a rendezvous claim.
func (s *Server) serveTransfer(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	if eid := r.URL.Query().Get("engine_id"); eid != s.cfg.EngineID {
		writeSide(w, http.StatusBadRequest, "remote_engine_id %q is not this engine (%q)", eid, s.cfg.EngineID)
		return
	}
	s.serveClaim(w, r, id, "transfer_id "+id)
}
