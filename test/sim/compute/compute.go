// Package compute is the simulators' model of an engine's compute time: a continuous
// batch of at most MaxRunning requests (the rest queue), prefill time that follows the
// uncached tokens and slows down when prefills run concurrently, a KV-transfer time per
// block, and the busy and queue time an instance accumulates. The HTTP simulator
// (test/sim) and the gRPC simulator (test/sim/grpcsim) share it.
//
// Prefill batching model: an instance computes PrefillTokensPerS prompt tokens per second
// in total, shared equally by the prefills in progress (processor sharing). A prefill of u
// uncached tokens pays PrefillFixed once, then proceeds in chunks of at most ChunkTokens
// (the engine's per-step token budget: vLLM max_num_batched_tokens, SGLang
// chunked_prefill_size); a chunk of c tokens started while k prefills are in progress
// (itself included) takes c × k ÷ PrefillTokensPerS. k is re-read at every chunk, so a
// long prefill slows down when others join and speeds up when they leave. Decode steps are
// not charged against the prefill budget (their inter-token latency grows with the running
// batch instead: test/sim Config.ITLPerRunning).
package compute

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultChunkTokens is the per-step prefill token budget when Config.ChunkTokens is 0
// (vLLM's max_num_batched_tokens for online serving on most GPUs; SGLang's
// chunked_prefill_size is 2048 on small GPUs, 8192 on large ones).
const DefaultChunkTokens = 2048

// Config sets the model's knobs; zero values mean "free" (no limit, no delay).
type Config struct {
	// MaxRunning is the continuous-batching width in requests; 0 = unlimited.
	MaxRunning int
	// PrefillTokensPerS is the instance's total prefill speed in uncached prompt tokens
	// per second; 0 = instant (PrefillFixed still applies).
	PrefillTokensPerS float64
	// PrefillFixed is the fixed cost of one prefill (scheduling, the first forward pass),
	// paid by every request that computes at least one prompt token.
	PrefillFixed time.Duration
	// ChunkTokens is the per-step prefill token budget; 0 = DefaultChunkTokens.
	ChunkTokens int
	// TransferPerBlock is the time a decode spends receiving one KV block it does not
	// already hold (a NIXL pull, a Mooncake transfer, a SGLang room); 0 = instant.
	TransferPerBlock time.Duration
}

// Sleep waits d and reports whether it completed (false: the request ended first).
type Sleep func(d time.Duration) bool

// Engine tracks one instance's batch, prefills in progress and busy/queue time. Safe for
// concurrent use.
type Engine struct {
	cfg        Config
	slots      chan struct{}
	waiting    atomic.Int64
	prefilling atomic.Int64
	queueNS    atomic.Int64

	mu        sync.Mutex
	computing int
	since     time.Time // start of the current busy period (computing > 0)
	busy      time.Duration
}

// New returns an idle engine.
func New(cfg Config) *Engine {
	if cfg.ChunkTokens <= 0 {
		cfg.ChunkTokens = DefaultChunkTokens
	}
	e := &Engine{cfg: cfg}
	if cfg.MaxRunning > 0 {
		e.slots = make(chan struct{}, cfg.MaxRunning)
	}
	return e
}

// Acquire takes a slot in the running batch, waiting while it is full; the wait counts in
// QueueMS and Waiting. From a successful Acquire to its Release the instance is busy.
// false: ctx ended first (no slot is held).
func (e *Engine) Acquire(ctx context.Context) bool {
	if e.slots != nil {
		select {
		case e.slots <- struct{}{}:
		default:
			start := time.Now()
			e.waiting.Add(1)
			select {
			case e.slots <- struct{}{}:
			case <-ctx.Done():
				e.waiting.Add(-1)
				e.AddQueue(time.Since(start))
				return false
			}
			e.waiting.Add(-1)
			e.AddQueue(time.Since(start))
		}
	}
	e.mu.Lock()
	if e.computing == 0 {
		e.since = time.Now()
	}
	e.computing++
	e.mu.Unlock()
	return true
}

// Release frees a slot taken by Acquire.
func (e *Engine) Release() {
	e.mu.Lock()
	e.computing--
	if e.computing == 0 {
		e.busy += time.Since(e.since)
	}
	e.mu.Unlock()
	if e.slots != nil {
		<-e.slots
	}
}

// AddQueue adds time a request waited to be admitted for another reason than a slot (KV
// blocks: the cache was full of blocks held by running requests).
func (e *Engine) AddQueue(d time.Duration) { e.queueNS.Add(int64(d)) }

// Waiting is the number of requests waiting for a slot now.
func (e *Engine) Waiting() int64 { return e.waiting.Load() }

// Prefill spends the time of computing tokens uncached prompt tokens (see the package
// comment), sleeping with sleep; false when sleep was interrupted. tokens <= 0 costs
// nothing.
func (e *Engine) Prefill(tokens int, sleep Sleep) bool {
	if tokens <= 0 {
		return true
	}
	e.prefilling.Add(1)
	defer e.prefilling.Add(-1)
	if !sleep(e.cfg.PrefillFixed) {
		return false
	}
	if e.cfg.PrefillTokensPerS <= 0 {
		return true
	}
	for tokens > 0 {
		c := min(tokens, e.cfg.ChunkTokens)
		k := float64(max(e.prefilling.Load(), 1))
		if !sleep(time.Duration(float64(c) * k / e.cfg.PrefillTokensPerS * float64(time.Second))) {
			return false
		}
		tokens -= c
	}
	return true
}

// PrefillTime is the time Prefill would take for tokens uncached tokens with nothing else
// in progress.
func (e *Engine) PrefillTime(tokens int) time.Duration {
	if tokens <= 0 {
		return 0
	}
	d := e.cfg.PrefillFixed
	if e.cfg.PrefillTokensPerS > 0 {
		d += time.Duration(float64(tokens) / e.cfg.PrefillTokensPerS * float64(time.Second))
	}
	return d
}

// Transfer spends the time of receiving blocks KV blocks; false when interrupted.
func (e *Engine) Transfer(blocks int, sleep Sleep) bool {
	if blocks <= 0 || e.cfg.TransferPerBlock <= 0 {
		return true
	}
	return sleep(time.Duration(blocks) * e.cfg.TransferPerBlock)
}

// QueueMS is the total time requests waited for admission, in milliseconds.
func (e *Engine) QueueMS() int64 { return e.queueNS.Load() / int64(time.Millisecond) }

// BusyMS is the total time at least one request held a slot, in milliseconds (the current
// busy period included).
func (e *Engine) BusyMS() int64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.busy
	if e.computing > 0 {
		d += time.Since(e.since)
	}
	return int64(d / time.Millisecond)
}

// Reset zeroes QueueMS and BusyMS (a busy period in progress restarts now).
func (e *Engine) Reset() {
	e.queueNS.Store(0)
	e.mu.Lock()
	e.busy = 0
	e.since = time.Now()
	e.mu.Unlock()
}
