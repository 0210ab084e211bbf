// Package policy holds the per-leg routing policies (seed "Per-Phase Policies";
// smg-spec.md §5). Each leg of a PD pair runs its own Policy instance, so stateful policies
// (round_robin, manual, cache_aware, bucket) keep separate state per leg. Build instances with
// New; the registry rejects unknown names and leg/policy combinations the seed forbids.
//
// # Concurrency contract
//
// Every Policy's Select is safe for concurrent use and race-free, but it does not account the
// pick: it reads worker.Live.Load() and returns an index. Atomic "select + account" (so that
// concurrent requests see each other's picks and a burst at idle workers spreads evenly) is
// the caller's job: the pair selector holds a per-leg lock around Select and the chosen
// worker's worker.Live.Acquire. Select never blocks on I/O except manual, which calls its
// StickyStore bounded by Options.StickyTimeout.
package policy

import (
	"context"

	"github.com/smg-go/smg/domain/worker"
)

// Leg names the leg a policy instance serves; it namespaces sticky keys ("prefill:", "decode:").
type Leg string

// The legs.
const (
	LegPrefill Leg = "prefill"
	LegDecode  Leg = "decode"
	LegEncode  Leg = "encode"
	LegRegular Leg = "regular"
)

// Request is what a policy may look at. Text is filled only when NeedsText reports true for
// one of the request's policies (cache_aware, prefix_hash, bucket), so other policies pay
// nothing for it. A Request is read-only to policies and is not retained after Select.
type Request struct {
	// Model is the request's model id ("" when none). cache_aware and bucket keep one state
	// per model ("" is kept as "unknown").
	Model string
	// Text is the routing text (prompt or joined message contents), or "" when not extracted.
	Text string
	// RoutingKey is the value of the first configured routing-key header (x-smg-routing-key), or "".
	RoutingKey string
	// Avoid lists the URLs of workers that already failed this request (a retry re-selects
	// both legs). The pair selector leaves them out of the candidates as long as another
	// worker of the same leg can serve; policies themselves need not look at it.
	Avoid []string
	// PinDecode, when set, is the URL of the decode worker a retry must keep while it
	// changes the prefill (the pair selector ignores it when that decode cannot serve): after
	// a timeout where neither leg answered, the retry tells which of the two was silent.
	PinDecode string
	// Tokens is the prompt length in tokens when the gateway knows it (token ids in the
	// request), else 0. least_load credits it to the winner; bucket sizes the request by it.
	Tokens int
	// TokenIDs are the prompt's token ids when the gateway tokenized it before selection (the
	// gRPC pipeline, a single prompt), else nil. cache_aware matches them against
	// Options.KVPrefixes. Read-only.
	TokenIDs []uint32
	// PromptTokens is the prompt size the selector counts on the picked workers' token load
	// (worker.Live.HoldTokens): Tokens when known, else the dispatcher's estimate
	// (handoff.Request.LoadPromptTokens: counted token ids, else body bytes ÷ 4). 0 falls back to Tokens.
	PromptTokens int
	// DecodeTokens is the number of tokens the request is expected to generate: its
	// max_tokens (or the route's equivalent) when set, else the gateway's default. The
	// selector counts it on the decode leg's worker (worker.Live.HoldTokens) for
	// --load-metric tokens; policies need not read it.
	DecodeTokens int
	// Ctx bounds I/O a policy does during Select (manual's sticky store); nil means
	// context.Background(). Cancelling it never fails the pick: the policy falls back to a
	// fresh pick.
	Ctx context.Context
}

// Policy picks one worker among candidates for one leg.
type Policy interface {
	// Name is the policy's flag value, e.g. "round_robin"; used as the `policy` metric label.
	Name() string
	// NeedsText reports whether Select reads Request.Text.
	NeedsText() bool
	// Select returns the index in candidates of the chosen worker, or -1 when none fits
	// (an empty candidate list, or least_load's waiting-queue veto dropped every worker).
	// candidates are all available (healthy, breaker closed). Select is called
	// concurrently and is safe for that; it must not keep the slice. See the package doc for
	// who accounts the pick.
	Select(candidates []*worker.Live, req *Request) int
}

// Evicter is implemented by policies with periodic maintenance (cache_aware). The app calls
// Evict every Options.EvictionInterval (--eviction-interval, 120 s) on each leg's instance.
type Evicter interface {
	// Evict trims the policy's state to its configured bounds; safe to call concurrently
	// with Select (it takes the same locks, so picks for a model wait while its tree is trimmed).
	Evict()
}

// WorkerRemover is implemented by policies that keep per-worker state (cache_aware, bucket,
// least_load, and the hash-ring caches of consistent_hashing and prefix_hash). The app calls
// RemoveWorker with the worker's URL when the worker is unregistered.
type WorkerRemover interface {
	// RemoveWorker drops all state for the worker registered at url (worker.Worker.URL).
	RemoveWorker(url string)
}

func reqCtx(r *Request) context.Context {
	if r == nil || r.Ctx == nil {
		return context.Background()
	}
	return r.Ctx
}

// BoardSelector is a Policy that can also choose from a worker.LoadBoard kept over the
// candidates, reading the least-loaded candidate and the sum of loads in O(1) instead of
// reading every candidate (cache_aware). The pair selector calls SelectBoard with the board
// of exactly c (b.For(c)) when it has one, Select otherwise. SelectBoard must accept any b,
// including nil or a board of another slice, by falling back to Select.
type BoardSelector interface {
	Policy
	SelectBoard(c []*worker.Live, b *worker.LoadBoard, req *Request) int
}
