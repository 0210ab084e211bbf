package sim

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/smg-go/smg/domain/wire"
)

// vLLM MoRIIOConnector (seed "MoRI-IO (HTTP)"). Every MoRI-IO instance runs two more
// loopback listeners, its handshake port and its notify port, so a wrong host or port named
// by the gateway really fails:
//
//	handshake: GET  /sim/moriio/handshake       → {"engine_id","notify_port"}
//	           POST /sim/moriio/read {transfer_id, remote_engine_id, block_ids}  (READ pull)
//	notify:    POST /sim/moriio/notify {transfer_id, kv}  (WRITE push, write_done)
//
// Prefill: a leg tagged do_remote_decode with a transfer_id keeps the prompt's KV and
// returns the handoff only when it ends at its one-token cap (max tokens 1, ignore_eos, no
// stop or stop_token_ids: the simulated first token always meets a stop condition when one
// is set). READ keeps the blocks for the decode's pull; WRITE pushes to the decode side
// channel its tag names (remote_host, remote_notify_port), in the background.
//
// Decode: READ pulls from the handoff's remote_host:remote_handshake_port; a missing or
// foreign handoff yields text computed over KV that never arrived (wrongText), never a
// recompute. WRITE first handshakes with the prefill's side channel (its notify port must
// match), then allocates blocks and waits for the push; a request aborted after allocating
// and before write_done keeps its blocks (leaked_blocks), as vLLM does. A WRITE decode
// without a handoff waits for a push that never comes (HandoffTimeout, then an error).

// moriioTag is what a MoRI-IO leg's kv_transfer_params carry, parsed loosely like the
// connector (ports as a number or a string).
type moriioTag struct {
	transferID, engineID, host string
	handshake, notify          int
	blocks                     []int64
}

func portOf(raw json.RawMessage) int {
	var n int
	if json.Unmarshal(raw, &n) == nil {
		return n
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		n, _ = strconv.Atoi(s)
	}
	return n
}

func readMoRIIOTag(m map[string]json.RawMessage) moriioTag {
	var t moriioTag
	_ = json.Unmarshal(m[wire.KVTransferID], &t.transferID)
	_ = json.Unmarshal(m[wire.KVRemoteEngineID], &t.engineID)
	_ = json.Unmarshal(m[wire.KVRemoteHost], &t.host)
	t.handshake, t.notify = portOf(m[wire.KVRemoteHandshakePort]), portOf(m[wire.KVRemoteNotifyPort])
	t.blocks, _ = flatBlocks(m[wire.KVRemoteBlockIDs])
	return t
}

// moriioParams is the handoff a MoRI-IO prefill returns (vLLM MoRIIOConnector
// request_finished: remote_block_ids one list per KV cache group).
type moriioParams struct {
	DoRemotePrefill     bool      `json:"do_remote_prefill"`
	DoRemoteDecode      bool      `json:"do_remote_decode"`
	TransferID          string    `json:"transfer_id"`
	RemoteEngineID      string    `json:"remote_engine_id"`
	RemoteBlockIDs      [][]int64 `json:"remote_block_ids,omitempty"`
	RemoteHost          string    `json:"remote_host"`
	RemoteHandshakePort int       `json:"remote_handshake_port"`
	RemoteNotifyPort    int       `json:"remote_notify_port"`
	RemoteDPSize        int       `json:"remote_dp_size"`
	TPSize              int       `json:"tp_size"`
}

// moriioPush is the body of POST /sim/moriio/notify and of a READ pull's answer.
type moriioPush struct {
	TransferID string    `json:"transfer_id"`
	KV         kvPayload `json:"kv"`
}

// moriioRead is the body of POST /sim/moriio/read.
type moriioRead struct {
	TransferID string  `json:"transfer_id"`
	EngineID   string  `json:"remote_engine_id"`
	BlockIDs   []int64 `json:"block_ids"`
}

// wrongSeed drives the text of a decode whose KV never arrived: neither HandoffText nor
// RecomputeText.
func wrongSeed(digest uint64) uint64 { return splitmix(digest ^ 0x6d6f7269696f) }

// WrongText is what a MoRI-IO READ decode answers without a valid handoff: text computed
// over KV that never arrived. It differs from [HandoffText] and [RecomputeText].
func WrongText(prompt string, maxTokens int) string {
	return genText(wrongSeed(digestIDs(tokenize(prompt, nil))), maxTokens)
}

// atOneTokenCap reports whether a MoRI-IO prefill leg ends at its one-token cap.
func atOneTokenCap(j *job, raw *rawReq) bool {
	return j.maxTokens == 1 && raw.IgnoreEOS && isNull(raw.Stop) && isNull(raw.StopTokenIDs)
}

// moriioPrefill registers a tagged MoRI-IO prefill after its compute and returns the handoff
// for the response (nil when the leg did not end at its cap). fs applies the handoff faults.
func (s *Server) moriioPrefill(j *job, raw *rawReq, tag moriioTag, fs *faultSet) *moriioParams {
	if !atOneTokenCap(j, raw) {
		return nil
	}
	it := &j.items[0]
	p := kvPayload{Digest: it.digest, PromptTokens: len(it.ids), EngineID: s.cfg.EngineID, FirstToken: tokenAt(it.seed, 0)}
	id := tag.transferID
	if fs.wrongTransferID {
		id += "-foreign"
	}
	out := &moriioParams{DoRemotePrefill: true, TransferID: id, RemoteEngineID: s.cfg.EngineID, RemoteHost: s.cfg.Host,
		RemoteHandshakePort: s.hsPort, RemoteNotifyPort: s.notifyPort, RemoteDPSize: 1, TPSize: 1}
	if s.cfg.MoRIIOMode == MoRIIOModeRead {
		out.RemoteBlockIDs = [][]int64{s.mori.put(id, p, s.cfg.HandoffTimeout, func() { s.c.unmatched.Add(1) })}
	} else {
		out.RemoteBlockIDs = [][]int64{allocBlocks(len(it.ids))}
		s.wg.Add(1)
		s.pushes.Add(1)
		go s.moriioPushTo(tag, id, p)
	}
	if fs.missingField {
		out.RemoteBlockIDs = nil
	}
	if fs.wrongPorts {
		out.RemoteHandshakePort++
		out.RemoteNotifyPort++
	}
	return out
}

func allocBlocks(tokens int) []int64 {
	n := max(1, (tokens+nixlBlockSize-1)/nixlBlockSize)
	b := make([]int64, n)
	for i := range b {
		b[i] = int64(i + 1)
	}
	return b
}

// moriioPushTo pushes the KV to the decode side channel the prefill tag named (WRITE),
// waiting up to HandoffTimeout for that decode to allocate its blocks: handoffs_sent on
// success, unmatched_rooms otherwise.
func (s *Server) moriioPushTo(tag moriioTag, id string, p kvPayload) {
	defer s.wg.Done()
	defer s.pushes.Add(-1) // after the counters: PendingHandoffs 0 means they are final
	if tag.host == "" || tag.notify == 0 {
		s.c.unmatched.Add(1)
		return
	}
	body, _ := json.Marshal(moriioPush{TransferID: id, KV: p})
	target := "http://" + net.JoinHostPort(tag.host, strconv.Itoa(tag.notify)) + "/sim/moriio/notify"
	if _, f := s.sideCall(s.ctx, http.MethodPost, target, body, s.cfg.HandoffTimeout+time.Second); f != nil {
		s.c.unmatched.Add(1)
		return
	}
	s.c.handoffsSent.Add(1)
}

// moriioDecode loads the KV of a MoRI-IO decode leg into j's single item (see the file
// comment). It returns errClientGone when the client left while waiting.
func (s *Server) moriioDecode(ctx context.Context, j *job, m map[string]json.RawMessage) *reqError {
	it := &j.items[0]
	tag := readMoRIIOTag(m)
	valid := len(j.items) == 1 && m != nil && isTrue(m, wire.KVDoRemotePrefill) && tag.transferID != "" && tag.host != ""
	if s.cfg.MoRIIOMode == MoRIIOModeRead {
		it.seed = wrongSeed(it.digest)
		if !valid || tag.handshake == 0 {
			return nil
		}
		body, _ := json.Marshal(moriioRead{TransferID: tag.transferID, EngineID: tag.engineID, BlockIDs: tag.blocks})
		target := "http://" + net.JoinHostPort(tag.host, strconv.Itoa(tag.handshake)) + "/sim/moriio/read"
		p, f := s.sideCall(ctx, http.MethodPost, target, body, s.cfg.HandoffTimeout)
		if f != nil {
			if f.gone {
				return errClientGone
			}
			return nil // a foreign handoff reads blocks that are not this prompt's
		}
		it.seed, it.cached, it.kvIn = handoffSeed(p.Digest), len(it.ids), true
		s.c.handoffsReceived.Add(1)
		return nil
	}
	if !valid {
		return s.waitNoPush(ctx)
	}
	hs := "http://" + net.JoinHostPort(tag.host, strconv.Itoa(tag.handshake)) + "/sim/moriio/handshake"
	info, f := s.handshake(ctx, hs)
	switch {
	case f != nil && f.gone:
		return errClientGone
	case f != nil:
		return kvLoadFailure("MoRI-IO handshake with %s failed: %s", hs, f.msg)
	case info.NotifyPort != tag.notify:
		return kvLoadFailure("MoRI-IO peer %s notifies on port %d, not remote_notify_port %d", hs, info.NotifyPort, tag.notify)
	case tag.engineID != "" && info.EngineID != tag.engineID:
		return kvLoadFailure("MoRI-IO peer %s is engine %q, not remote_engine_id %q", hs, info.EngineID, tag.engineID)
	}
	sl, dup := s.rv.arrive(tag.transferID, sideD)
	if dup {
		s.c.duplicate.Add(1)
		return badRequest("Duplicate transfer_id %q: a decode request with this id is already waiting", tag.transferID)
	}
	defer s.rv.leave(sl, sideD)
	blocks := int64(len(allocBlocks(len(it.ids))))
	timer := time.NewTimer(s.cfg.HandoffTimeout)
	defer timer.Stop()
	select {
	case p := <-sl.kv:
		close(sl.got)
		it.seed, it.cached, it.kvIn = handoffSeed(p.Digest), len(it.ids), true
		s.c.handoffsReceived.Add(1)
		return nil
	case <-ctx.Done():
		s.c.leakedBlocks.Add(blocks) // aborted before write_done: vLLM keeps the blocks
		return errClientGone
	case <-timer.C:
		s.c.unmatched.Add(1)
		s.c.leakedBlocks.Add(blocks)
		return kvLoadFailure("no MoRI-IO write_done for transfer_id %q within %s", tag.transferID, secs(s.cfg.HandoffTimeout))
	}
}

// waitNoPush is a WRITE decode without a handoff: it waits for a push that never comes.
func (s *Server) waitNoPush(ctx context.Context) *reqError {
	timer := time.NewTimer(s.cfg.HandoffTimeout)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return errClientGone
	case <-timer.C:
		s.c.unmatched.Add(1)
		return kvLoadFailure("no MoRI-IO handoff arrived within %s", secs(s.cfg.HandoffTimeout))
	}
}

type handshakeInfo struct {
	EngineID   string `json:"engine_id"`
	NotifyPort int    `json:"notify_port"`
}

func (s *Server) handshake(ctx context.Context, url string) (handshakeInfo, *fetchFailure) {
	var info handshakeInfo
	cctx, cancel := context.WithTimeout(ctx, s.cfg.HandoffTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(cctx, http.MethodGet, url, nil)
	resp, err := s.client.Do(req)
	if err != nil {
		return info, &fetchFailure{gone: ctx.Err() != nil, msg: err.Error()}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&info) != nil {
		return info, &fetchFailure{status: resp.StatusCode, msg: "bad handshake answer"}
	}
	return info, nil
}

// moriioMux serves the handshake listener (handshake, READ pulls) or the notify listener
// (WRITE pushes).
func (s *Server) moriioMux(notify bool) http.Handler {
	mux := http.NewServeMux()
	if notify {
		mux.HandleFunc("POST /sim/moriio/notify", s.serveNotify)
	} else {
		mux.HandleFunc("GET /sim/moriio/handshake", func(w http.ResponseWriter, _ *http.Request) {
			b, _ := json.Marshal(handshakeInfo{EngineID: s.cfg.EngineID, NotifyPort: s.notifyPort})
			writeJSONStatus(w, http.StatusOK, b)
		})
		mux.HandleFunc("POST /sim/moriio/read", s.serveMoRIIORead)
	}
	mux.HandleFunc("/", notFound)
	return mux
}

// serveMoRIIORead is a READ decode's pull from this prefill: 400 engine id mismatch, 404
// unknown or consumed transfer_id, 409 block ids mismatch.
func (s *Server) serveMoRIIORead(w http.ResponseWriter, r *http.Request) {
	var req moriioRead
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeSide(w, http.StatusBadRequest, "bad read request: %v", err)
		return
	}
	if req.EngineID != s.cfg.EngineID {
		writeSide(w, http.StatusBadRequest, "remote_engine_id %q is not this engine (%q)", req.EngineID, s.cfg.EngineID)
		return
	}
	p, status := s.mori.take(req.TransferID, req.BlockIDs)
	if status != http.StatusOK {
		writeSide(w, status, "no KV blocks %v under transfer_id %q", req.BlockIDs, req.TransferID)
		return
	}
	s.c.handoffsSent.Add(1)
	b, _ := json.Marshal(p)
	writeJSONStatus(w, http.StatusOK, b)
}

// serveNotify is a prefill's push to this WRITE decode: it waits (HandoffTimeout) for the
// decode request of transfer_id to allocate its blocks, delivers the KV (write_done) and
// answers 200; 409 duplicate push, 410 the decode left first, 504 no decode.
func (s *Server) serveNotify(w http.ResponseWriter, r *http.Request) {
	var push moriioPush
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&push); err != nil {
		writeSide(w, http.StatusBadRequest, "bad push: %v", err)
		return
	}
	sl, dup := s.rv.arrive(push.TransferID, sideP)
	if dup {
		s.c.duplicate.Add(1)
		writeSide(w, http.StatusConflict, "duplicate push for transfer_id %q", push.TransferID)
		return
	}
	defer s.rv.leave(sl, sideP)
	timer := time.NewTimer(s.cfg.HandoffTimeout)
	defer timer.Stop()
	select {
	case <-sl.dArrived:
	case <-timer.C:
		writeSide(w, http.StatusGatewayTimeout, "no decode request for transfer_id %q within %s", push.TransferID, secs(s.cfg.HandoffTimeout))
		return
	case <-r.Context().Done():
		return
	}
	sl.kv <- push.KV
	select {
	case <-sl.got:
		writeJSONStatus(w, http.StatusOK, []byte(`{"write_done":true}`))
	case <-sl.dLeft:
		// A decode that took the KV and finished at once closes both: select picks either,
		// and the push was delivered.
		if sl.delivered() {
			writeJSONStatus(w, http.StatusOK, []byte(`{"write_done":true}`))
			return
		}
		writeSide(w, http.StatusGone, "the decode of transfer_id %q left before write_done", push.TransferID)
	case <-r.Context().Done():
	}
}
