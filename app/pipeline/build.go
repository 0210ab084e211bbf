package pipeline

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// DefaultBootstrapPort is the prefill bootstrap port a gRPC leg is pointed at when the
// prefill worker was registered without one (seed "Parallel Dispatch").
const DefaultBootstrapPort = 8998

// unit is one backend request of a plan: a prefill leg and a decode leg sharing a request
// id (and, on the parallel path, a rendezvous). index is the first choice index its output
// fills; width the samples it carries (n inside the engine, 1 after fan-out).
type unit struct {
	prompt int
	index  int
	width  int
	pLeg   ports.GRPCLeg
	dLeg   ports.GRPCLeg
	// identity is a vLLM prefill's media_identity (worker-side media), relayed to decode.
	identity *ports.GRPCMediaIdentity
	// local: a decode-only unit (selective PD), served by dLeg alone with no prefill leg.
	local bool
}

// responseID is the client-facing id of the response (chatcmpl-…, cmpl-…, the /generate
// rid or a fresh id) and the base of every engine request id (grpc.md §1.7: under PD a
// client rid becomes {rid}-{uuidv7}, fresh on every attempt).
func (pl *Pipeline) responseID(j *job) (client, engine string) {
	u := pl.newUUID()
	switch j.rq.Route {
	case handoff.RouteChat:
		return "chatcmpl-" + u, "chatcmpl-" + u
	case handoff.RouteCompletions:
		return "cmpl-" + u, "cmpl-" + u
	case handoff.RouteMessages:
		return "msg_" + u, "msg_" + u
	case handoff.RouteResponses:
		return "resp_" + u, "resp_" + u
	}
	if j.rid != "" {
		return j.rid, j.rid + "-" + u
	}
	return u, u
}

// plan is the build stage: the backend requests of one attempt. Parallel runtimes fan a
// text request with n>1 out into n single-sample units "<id>-<i>" with their own rooms and,
// on TokenSpeed, seeds offset by i (grpc.md §1.6); a batch gets one unit per prompt
// "<id>-p<i>". vLLM keeps n inside one unit (no fan-out).
func (pl *Pipeline) plan(j *job, proto protocol, base string, p, dc *worker.Live) []unit {
	var out []unit
	fanout := proto != sequentialVLLM && j.n > 1 && j.mm == nil // multimodal keeps one dispatch
	for pi, pr := range j.prompts {
		id := base
		if j.batch {
			id = base + "-p" + strconv.Itoa(pi)
		}
		mk := func(rid string, idx, width int, seedOffset int64) unit {
			s := j.sampling
			s.N = uint32(width)
			if s.Seed != nil && seedOffset != 0 {
				v := *s.Seed + seedOffset
				s.Seed = &v
			}
			leg := ports.GRPCLeg{RequestID: rid, Text: pr.text, InputIDs: pr.ids, Sampling: s, Stream: j.stream,
				Logprobs: j.lp.on, TopLogprobs: j.lp.top}
			u := unit{prompt: pi, index: idx, width: width, pLeg: leg, dLeg: leg}
			u.pLeg.Worker, u.dLeg.Worker = p, dc
			u.pLeg.PromptLogprobs = j.lp.prompt // the prompt's logprobs come from the prefill
			if proto != sequentialVLLM {
				rv := mintRendezvous(proto, p)
				u.pLeg.Rendezvous, u.dLeg.Rendezvous = rv, rv
				// The prefill's output is one token the client never sees: no stream needed.
				u.pLeg.Stream = false
			}
			switch {
			case !pl.cfg.DPAware:
			case proto != parallelTokenSpeed:
				u.pLeg.DPRank, u.dLeg.DPRank = p.DPRank, dc.DPRank
			case p.DPSize != nil && *p.DPSize > 1:
				// TokenSpeed places both legs by room residue (the room names the prefill's
				// rank); the prefill is pinned to that same rank only when the engine
				// advertises attention DP (grpc.md §1.1), the decode follows the room.
				u.pLeg.DPRank = p.DPRank
			}
			return u
		}
		if fanout {
			for i := 0; i < j.n; i++ {
				out = append(out, mk(id+"-"+strconv.Itoa(i), pi*j.n+i, 1, int64(i)))
			}
			continue
		}
		out = append(out, mk(id, pi*j.n, j.n, 0))
	}
	return out
}

// mintRendezvous points both legs at the prefill's bootstrap server with a fresh room
// (grpc.md §1.7): SGLang uniform in [0, 2^31−1); TokenSpeed uniform in [0, 2^63−1), or, when
// the prefill is DP rank r of d > 1, base − base mod d + r so room % d == r.
func mintRendezvous(proto protocol, p *worker.Live) *ports.GRPCRendezvous {
	port := DefaultBootstrapPort
	if p.BootstrapPort != nil && *p.BootstrapPort > 0 {
		port = *p.BootstrapPort
	}
	rv := &ports.GRPCRendezvous{Host: p.BootstrapHost(), Port: port}
	if proto == parallelSGLang {
		rv.Room = int64(rand.Int32N(math.MaxInt32))
		return rv
	}
	if p.DPSize != nil && p.DPRank != nil && *p.DPSize > 1 && *p.DPRank < *p.DPSize {
		d := int64(*p.DPSize)
		b := rand.Int64N(math.MaxInt64 - d)
		rv.Room = b - b%d + int64(*p.DPRank)
		return rv
	}
	rv.Room = rand.Int64N(math.MaxInt64)
	return rv
}
