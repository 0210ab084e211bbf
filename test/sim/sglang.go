package sim

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// SGLang PD handoff (engines.md §2.3–§2.6). The prefill registers each item's room on its
// bootstrap listener and waits for the decode's claim (KVPoll.Bootstrapping), computes the
// prefill, hands the KV over and answers only after the decode received it. The decode
// claims the room at bootstrap_host:bootstrap_port and waits for the KV
// (KVPoll.WaitingForInput); its first token is the prefill's.

// errClientGone marks a request whose client went away; it is counted in aborted and never
// written.
var errClientGone = &reqError{status: 499, msg: "client disconnected"}

func roomKey(room uint64) string { return strconv.FormatUint(room, 10) }

func transferError(room uint64, format string, a ...any) *reqError {
	return &reqError{status: http.StatusInternalServerError,
		msg: fmt.Sprintf("KVTransferError(bootstrap_room=%d): ", room) + fmt.Sprintf(format, a...)}
}

func secs(d time.Duration) string { return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s" }

// sglangPrefill runs the prefill side for every item of j. It returns with the compute slot
// held (release via the returned func, never nil) so the response is written inside it.
func (s *Server) sglangPrefill(ctx context.Context, j *job, ts []bootTarget) (release func(), e *reqError) {
	release = func() {}
	slots := make([]*slot, len(ts))
	timedOut := false
	defer func() {
		var unmatched func()
		if timedOut {
			unmatched = func() { s.c.unmatched.Add(1) }
		}
		for _, sl := range slots {
			if sl != nil {
				s.rv.leaveCounting(sl, sideP, unmatched)
			}
		}
	}()
	for i, t := range ts {
		sl, dup := s.rv.arrive(roomKey(t.room), sideP)
		if dup {
			s.c.duplicate.Add(1)
			return release, badRequest("Duplicate bootstrap_room %d: a request with this room is already in flight on this prefill", t.room)
		}
		slots[i] = sl
	}
	timer := time.NewTimer(s.cfg.HandoffTimeout)
	defer timer.Stop()
	for i, sl := range slots {
		select {
		case <-sl.dArrived:
		case <-timer.C:
			timedOut = true
			return release, transferError(ts[i].room, "Request %d timed out after %s in KVPoll.Bootstrapping", ts[i].room, secs(s.cfg.HandoffTimeout))
		case <-ctx.Done():
			return release, errClientGone
		}
	}
	kvRelease, e := s.admitKV(ctx, j)
	release = kvRelease
	if e != nil {
		return release, e
	}
	if !s.acquire(ctx) {
		return release, errClientGone
	}
	release = func() {
		s.release()
		kvRelease()
	}
	if !s.computePrompts(ctx, j) {
		return release, errClientGone
	}
	for i, sl := range slots {
		it := &j.items[i]
		it.seed = handoffSeed(it.digest)
		sl.kv <- kvPayload{Digest: it.digest, PromptTokens: len(it.ids), EngineID: s.cfg.EngineID, FirstToken: tokenAt(it.seed, 0), DPRank: j.routedRank}
	}
	for i, sl := range slots {
		select {
		case <-sl.got:
		case <-sl.dLeft:
			if !sl.delivered() {
				return release, transferError(ts[i].room, "the decode went away during the KV transfer")
			}
		case <-timer.C:
			timedOut = true
			return release, transferError(ts[i].room, "Request %d timed out after %s in KVPoll.Transferring", ts[i].room, secs(s.cfg.HandoffTimeout))
		case <-ctx.Done():
			return release, errClientGone
		}
	}
	return release, nil // handoffs_sent: counted by serveClaim as each KV went out
}

// sglangDecode claims every item's room at its bootstrap server, concurrently, and seeds the
// items from the KV received.
func (s *Server) sglangDecode(ctx context.Context, j *job, ts []bootTarget) *reqError {
	fetch := func(i int) *reqError {
		t := ts[i]
		url := "http://" + t.addr() + "/sim/sglang/rooms/" + roomKey(t.room)
		p, f := s.sideCall(ctx, http.MethodGet, url, nil, s.cfg.HandoffTimeout)
		if f != nil {
			switch {
			case f.gone:
				return errClientGone
			case f.timedOut:
				s.c.unmatched.Add(1)
				return transferError(t.room, "Request %d timed out after %s in KVPoll.WaitingForInput", t.room, secs(s.cfg.HandoffTimeout))
			case f.status == 0:
				return transferError(t.room, "failed to reach bootstrap server %s: %s", t.addr(), f.msg)
			}
			return transferError(t.room, "bootstrap server %s answered %d: %s", t.addr(), f.status, f.msg)
		}
		if p.DPRank != nil && (j.prefillRank == nil || *j.prefillRank != *p.DPRank) {
			s.c.unmatched.Add(1)
			return transferError(t.room, "disagg_prefill_dp_rank %s does not name the prefill's rank %d", rankText(j.prefillRank), *p.DPRank)
		}
		it := &j.items[i]
		it.seed, it.cached, it.kvIn = handoffSeed(p.Digest), len(it.ids), true
		s.c.handoffsReceived.Add(1)
		return nil
	}
	if len(ts) == 1 {
		return fetch(0)
	}
	errs := make([]*reqError, len(ts))
	var wg sync.WaitGroup
	for i := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = fetch(i)
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e == errClientGone {
			return e
		}
	}
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// serveRoom is GET /sim/sglang/rooms/{room} on the bootstrap listener.
func (s *Server) serveRoom(w http.ResponseWriter, r *http.Request) {
	room, ok := parseRoom([]byte(r.PathValue("room")))
	if !ok {
		writeSide(w, http.StatusBadRequest, "bad room %q", r.PathValue("room"))
		return
	}
	s.serveClaim(w, r, roomKey(room), "bootstrap_room "+roomKey(room))
}
