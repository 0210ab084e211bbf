package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The side channel is real loopback HTTP between a decode and its prefill's bootstrap
// listener (SGLang, Mooncake) or main listener (NIXL), so a wrong host, port, room or id
// injected by the gateway really fails. Endpoints (served by the prefill):
//
//	GET  /sim/sglang/rooms/{room}          claim a SGLang room, wait for its KV
//	GET  /sim/mooncake/transfers/{id}?engine_id=E   fetch a Mooncake transfer
//	POST /sim/nixl/pull {remote_engine_id, remote_request_id, remote_block_ids}
//
// Success is 200 with a kvPayload; failures are 4xx/5xx with {"error": "<text>"}.

// sideError is the body of a failed side-channel call.
type sideError struct {
	Error string `json:"error"`
}

func writeSide(w http.ResponseWriter, status int, format string, a ...any) {
	b, _ := json.Marshal(sideError{Error: fmt.Sprintf(format, a...)})
	writeJSONStatus(w, status, b)
}

// fetchFailure describes why a side-channel call failed.
type fetchFailure struct {
	timedOut bool   // the peer never showed up within the handoff timeout
	gone     bool   // our own client went away
	status   int    // peer's HTTP status, 0 for a transport error
	msg      string // peer's message or the transport error
}

// sideCall performs one side-channel request bounded by timeout and decodes the payload.
func (s *Server) sideCall(ctx context.Context, method, url string, body []byte, timeout time.Duration) (kvPayload, *fetchFailure) {
	var p kvPayload
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(cctx, method, url, rd)
	if err != nil {
		return p, &fetchFailure{msg: err.Error()}
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return p, &fetchFailure{gone: true, msg: ctx.Err().Error()}
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return p, &fetchFailure{timedOut: true, msg: "deadline exceeded"}
		}
		return p, &fetchFailure{msg: err.Error()}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		if ctx.Err() != nil {
			return p, &fetchFailure{gone: true, msg: ctx.Err().Error()}
		}
		return p, &fetchFailure{status: resp.StatusCode, msg: err.Error()}
	}
	if resp.StatusCode != http.StatusOK {
		var se sideError
		_ = json.Unmarshal(data, &se)
		return p, &fetchFailure{status: resp.StatusCode, timedOut: resp.StatusCode == http.StatusGatewayTimeout, msg: se.Error}
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, &fetchFailure{status: resp.StatusCode, msg: "bad KV payload: " + err.Error()}
	}
	return p, nil
}

// serveClaim is the decode side of a rendezvous, run by the prefill's bootstrap listener:
// attach to key, wait (bounded by the handoff timeout) for the prefill's KV and send it,
// counting handoffs_sent once it went out.
// 409 duplicate claim, 410 the prefill gave up, 504 no prefill within the timeout.
func (s *Server) serveClaim(w http.ResponseWriter, r *http.Request, key, what string) {
	sl, dup := s.rv.arrive(key, sideD)
	if dup {
		s.c.duplicate.Add(1)
		writeSide(w, http.StatusConflict, "duplicate %s: already claimed by another decode", what)
		return
	}
	defer s.rv.leave(sl, sideD)
	timer := time.NewTimer(s.cfg.HandoffTimeout)
	defer timer.Stop()
	select {
	case p := <-sl.kv:
		b, _ := json.Marshal(p)
		h := w.Header()
		h.Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		if _, err := w.Write(b); err == nil {
			if err := http.NewResponseController(w).Flush(); err == nil {
				// Counted here, not by the prefill leg once it sees got: the decode reads
				// the payload to its end, so it goes on (and can answer) only after this
				// handler returns, and its client must then find handoffs_sent counted.
				s.c.handoffsSent.Add(1)
				close(sl.got)
			}
		}
	case <-sl.pLeft:
		writeSide(w, http.StatusGone, "%s: the prefill aborted before the transfer", what)
	case <-timer.C:
		writeSide(w, http.StatusGatewayTimeout, "%s: no prefill within %s", what, s.cfg.HandoffTimeout)
	case <-r.Context().Done():
	}
}
