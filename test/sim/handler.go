package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/smg-go/smg/domain/wire"
)

// maxBodyBytes bounds an inference request body (64 MiB).
const maxBodyBytes = 64 << 20

var bufPool = sync.Pool{New: func() any { return new(bytes.Buffer) }}

var nullJSON = json.RawMessage("null")

// inference adapts serveInference to a route.
func (s *Server) inference(rt route) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.serveInference(w, r, rt) }
}

// serveInference is the pipeline of every generation route: count, parse, apply faults,
// validate, run the engine's handoff, compute, answer.
func (s *Server) serveInference(w http.ResponseWriter, r *http.Request, rt route) {
	s.c.requests.Add(1)
	s.c.enter()
	defer s.c.leave()
	ctx := r.Context()
	if s.cfg.Engine == EngineVLLM {
		if xrid := r.Header.Get(wire.HeaderRequestID); xrid != "" {
			w.Header().Set(wire.HeaderRequestID, xrid)
		}
	}
	o := &out{w: w, rc: http.NewResponseController(w), s: s, ctx: ctx}

	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer bufPool.Put(buf)
	if _, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, maxBodyBytes)); err != nil {
		if ctx.Err() != nil {
			o.fail(errClientGone)
			return
		}
		o.fail(badRequest("could not read the request body: %v", err))
		return
	}
	var raw rawReq
	if err := json.Unmarshal(buf.Bytes(), &raw); err != nil {
		o.fail(badRequest("JSON decode error: %v", err))
		return
	}
	o.stream = raw.Stream
	canary := isCanary(r, &raw)
	if canary {
		s.c.canary.Add(1)
	}
	faults, err := parseRequestFaults(raw.SimFault, s.cfg.Role, append(append([]Fault(nil), s.faults...), s.liveFaults()...))
	if err != nil {
		o.fail(badRequest("%v", err))
		return
	}
	fs := resolveFaults(faults)
	if !s.applyFaults(ctx, o, &fs) {
		return
	}

	j, e := normalize(s.tok, rt, &raw)
	if e == nil {
		e = s.validate(&raw, j)
	}
	if e != nil {
		o.fail(e)
		return
	}
	j.canary = canary
	res := &output{n: j.maxTokens, finishLen: j.maxTokens, model: s.cfg.Model, start: time.Now()}
	res.created = res.start.Unix()
	res.id = s.requestID(r, j)
	release, e := s.run(ctx, r, j, &raw, &fs, res)
	defer release()
	if e != nil {
		if e.generation && j.stream {
			s.failGenerating(o, j, res, e)
			return
		}
		o.fail(e)
		return
	}
	defer func() {
		if res.nixlID != "" {
			s.nixl.drop(res.nixlID) // the params never reached the client: free the blocks
		}
		if res.moriID != "" {
			s.mori.drop(res.moriID)
		}
	}()
	if j.stream {
		if e := s.stream(ctx, o, j, res, fs.dieAfter); e != nil {
			o.fail(e)
		}
		return
	}
	steps := res.n
	if fs.dieAfter >= 0 {
		steps = min(steps, fs.dieAfter)
	}
	if steps > 1 && !s.sleep(ctx, time.Duration(steps-1)*s.itl()) {
		o.fail(errClientGone)
		return
	}
	body := renderBody(j, res)
	if fs.dieAfter >= 0 {
		o.head()
		_, _ = w.Write(body[:len(body)/2])
		_ = o.rc.Flush()
		panic(http.ErrAbortHandler)
	}
	s.c.genTokens.Add(int64(res.n * len(j.items)))
	if !o.body(body) {
		o.fail(errClientGone)
		return
	}
	res.nixlID, res.moriID = "", "" // delivered: the blocks wait for the decode's pull (or the lease)
}

// applyFaults runs the faults that act before the request is processed. It returns false
// when the request is finished (answered, cut or abandoned).
func (s *Server) applyFaults(ctx context.Context, o *out, fs *faultSet) bool {
	if fs.slowFirstByte > 0 && !s.sleep(ctx, fs.slowFirstByte) {
		o.fail(errClientGone)
		return false
	}
	switch {
	case fs.reset:
		panic(http.ErrAbortHandler)
	case fs.hang:
		t := time.NewTimer(s.cfg.HangMax)
		defer t.Stop()
		select {
		case <-ctx.Done():
			o.fail(errClientGone)
			return false
		case <-t.C:
			panic(http.ErrAbortHandler)
		}
	case fs.status != 0:
		o.fail(&reqError{status: fs.status, msg: "sim fault: injected status " + strconv.Itoa(fs.status)})
		return false
	case fs.malformed:
		if o.stream {
			o.head()
			_, _ = o.w.Write([]byte("data: {\"id\": \"sim-malformed\", \"choices\": [\n\ndata: [DONE]\n\n"))
		} else {
			o.w.Header().Set("Content-Type", "application/json")
			o.w.WriteHeader(http.StatusOK)
			_, _ = o.w.Write([]byte(`{"id": "sim-malformed", "choices": [{"text": `))
		}
		return false
	}
	if fs.delayBodySet {
		o.delay = fs.delayBody
		o.head()
	}
	return true
}

// validate applies the engine's request checks: the served model (vLLM) and the context
// length (both).
func (s *Server) validate(raw *rawReq, j *job) *reqError {
	if e := s.checkDPRank(raw, j); e != nil {
		return e
	}
	if s.cfg.Engine == EngineVLLM && raw.Model != "" && raw.Model != s.cfg.Model {
		return &reqError{status: http.StatusNotFound, param: "model",
			msg: "The model `" + raw.Model + "` does not exist."}
	}
	if l := j.maxPromptLen(); l > s.cfg.MaxModelLen {
		if s.cfg.Engine == EngineVLLM {
			return &reqError{status: http.StatusBadRequest, param: "input_tokens",
				msg: "This model's maximum context length is " + itoa(s.cfg.MaxModelLen) +
					" tokens. However, your request has " + itoa(l) + " input tokens. Please reduce the length of the input messages."}
		}
		return badRequest("The input (%d tokens) is longer than the model's context length (%d tokens).", l, s.cfg.MaxModelLen)
	}
	return s.checkMaxTokens(j)
}

// checkMaxTokens refuses an output budget that does not fit the context window beside the
// longest prompt (and, on vLLM, one under 1), as the engines do before they allocate anything (and so the simulator's
// per-token buffers stay bounded by MaxModelLen): vLLM answers 400 when max_tokens >
// max_model_len - prompt tokens (serving_engine's "'max_tokens' or 'max_completion_tokens'
// is too large"), SGLang with tokenizer_manager's "Requested token count exceeds the model's
// maximum context length" (the simulator applies the same bound to both: a budget that
// exactly fills the window is served).
func (s *Server) checkMaxTokens(j *job) *reqError {
	l, ctxLen := j.maxPromptLen(), s.cfg.MaxModelLen
	room := ctxLen - l
	if s.cfg.Engine == EngineVLLM {
		if j.maxTokens < 1 { // SamplingParams._verify_args; SGLang serves 0 (an empty answer)
			return badRequest("max_tokens must be at least 1, got %d.", j.maxTokens)
		}
		if j.maxTokens > room {
			return &reqError{status: http.StatusBadRequest, param: "max_tokens",
				msg: "'max_tokens' or 'max_completion_tokens' is too large: " + itoa(j.maxTokens) +
					". This model's maximum context length is " + itoa(ctxLen) + " tokens and your request has " +
					itoa(l) + " input tokens (" + itoa(j.maxTokens) + " > " + itoa(ctxLen) + " - " + itoa(l) + ")."}
		}
		return nil
	}
	if j.maxTokens > room {
		return badRequest("Requested token count exceeds the model's maximum context length of %d tokens. You requested a total of %d tokens: %d tokens from the input messages and %d tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.",
			ctxLen, satAdd(l, j.maxTokens), l, j.maxTokens)
	}
	return nil
}

// satAdd is a + b for non-negative ints, saturating instead of wrapping.
func satAdd(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}

func (s *Server) requestID(r *http.Request, j *job) string {
	if j.rid != "" {
		return j.rid
	}
	if xrid := r.Header.Get(wire.HeaderRequestID); xrid != "" {
		return xrid
	}
	return s.idPrefix + strconv.FormatUint(s.seq.Add(1), 16)
}

// run performs the engine-specific handoff and the prefill compute. It returns with the
// compute slot held; release (never nil) frees it.
func (s *Server) run(ctx context.Context, r *http.Request, j *job, raw *rawReq, fs *faultSet, res *output) (func(), *reqError) {
	noop := func() {}
	for i := range j.items {
		j.items[i].seed = localSeed(j.items[i].digest)
	}
	var (
		tagged     bool
		transferID string
		mc         *slot
		mtag       *moriioTag // a tagged MoRI-IO prefill leg
	)
	if !j.canary && decodeOnlyShape(s.cfg.Engine, raw) {
		switch s.cfg.Role {
		case RoleDecode:
			s.c.decodeOnly.Add(1)
		case RolePrefill:
			s.c.prefillOnly.Add(1)
		}
	}
	if s.cfg.Engine == EngineSGLang {
		ts, e := parseBootstrap(raw, len(j.items))
		if e != nil {
			return noop, e
		}
		fake := fakeBootstrap(ts)
		if s.cfg.Role == RolePrefill {
			res.n, res.finishLen = 1, 0
			if fake {
				return noop, nil // SGLang's warmup form: a fake KV sender, no peer
			}
			return s.sglangPrefill(ctx, j, ts)
		}
		if !fake { // a fake KV receiver computes locally
			if e := s.sglangDecode(ctx, j, ts); e != nil {
				return noop, e
			}
		}
	} else {
		res.kv = nullJSON
		var e *reqError
		if s.cfg.Role == RoleDecode {
			params := raw.KVTransferParams
			if fs.noKV {
				params = nil // the decode drops the handoff it was given and recomputes
			}
			e = s.vllmDecodeHandoff(ctx, j, params)
		} else if s.cfg.KVConnector == ConnectorMoRIIO {
			var m map[string]json.RawMessage
			if m, e = kvParams(raw.KVTransferParams); m != nil && isTrue(m, wire.KVDoRemoteDecode) && len(j.items) == 1 {
				if t := readMoRIIOTag(m); t.transferID != "" && !fs.noKV {
					tagged, mtag = true, &t
				}
			}
		} else {
			tagged, transferID, e = s.vllmPrefillTag(j, raw.KVTransferParams, r)
			tagged = tagged && !fs.noKV
		}
		if e != nil {
			return noop, e
		}
		if tagged {
			j.items[0].seed = handoffSeed(j.items[0].digest)
			if transferID != "" {
				var dup bool
				if mc, dup = s.rv.arrive(transferID, sideP); dup {
					s.c.duplicate.Add(1)
					return noop, badRequest("Duplicate transfer_id %q: a transfer with this id is already in flight on this prefill", transferID)
				}
			}
		}
	}
	abandon := func() {
		if mc != nil {
			s.rv.leave(mc, sideP)
		}
	}
	kvRelease, e := s.admitKV(ctx, j)
	if e != nil {
		kvRelease()
		abandon()
		return noop, e
	}
	if !s.acquire(ctx) {
		kvRelease()
		abandon()
		return noop, errClientGone
	}
	release := func() {
		s.release()
		kvRelease()
	}
	if !s.computePrompts(ctx, j) {
		abandon()
		return release, errClientGone
	}
	switch {
	case mtag != nil:
		if ctx.Err() != nil {
			return release, errClientGone
		}
		if p := s.moriioPrefill(j, raw, *mtag, fs); p != nil {
			res.kv, _ = json.Marshal(p)
			if s.cfg.MoRIIOMode == MoRIIOModeRead {
				res.moriID = p.TransferID
			}
		}
	case mc != nil:
		it := &j.items[0]
		mc.kv <- kvPayload{Digest: it.digest, PromptTokens: len(it.ids), EngineID: s.cfg.EngineID, FirstToken: tokenAt(it.seed, 0)}
		s.wg.Add(1)
		go s.mooncakeLease(mc)
	case tagged:
		if ctx.Err() != nil {
			return release, errClientGone
		}
		p := s.nixlRegister(j, r.Header.Get(wire.HeaderRequestID))
		res.kv, _ = json.Marshal(p)
		if fs.kvLost {
			s.nixl.drop(p.RemoteRequestID) // the params go out; the blocks are gone
		} else {
			res.nixlID = p.RemoteRequestID
		}
	}
	return release, nil
}
