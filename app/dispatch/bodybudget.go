package dispatch

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/media"
	"github.com/smg-go/smg/domain/wire"
)

// bodyBudgetWait is how long a request waits for room in the body budget before it is shed.
const bodyBudgetWait = 2 * time.Second

// bodyShedRetryAfterSecs is the Retry-After of a request shed for the body budget.
const bodyShedRetryAfterSecs = 1

// bodyCollectAfterBytes is the request-body memory (bytes) given back after which the
// collector runs at once: bodies are garbage the moment their request ends, and --gogc
// (400 %: five times the live heap) would otherwise let many of them pile up.
const bodyCollectAfterBytes = 64 << 20

// bodyGarbageFactor is the garbage one body byte leaves when its request ends, counted
// towards bodyCollectAfterBytes: parsing a JSON body copies it (decoded strings, the chat
// template's strings, a data URL's bytes); about 5 times its size was measured for a chat
// request with one data URL over gRPC.
const bodyGarbageFactor = 4

// bodyBudget bounds the request-body bytes the data plane holds at once
// (--max-inflight-body-mb): a body's buffer is reserved before it is allocated (the first
// before a byte is read, each growth as the bytes arrive) and given back when its request
// ends, so many large bodies (inline images as data URLs) wait or are shed instead of all
// being read into memory together. It is a byte-only media.Budget (no slots; waiters in arrival order).
// A nil *bodyBudget is unbounded. Safe for concurrent use.
type bodyBudget struct {
	b    *media.Budget
	wait time.Duration
	// garbage counts the body bytes given back since the last collection.
	garbage atomic.Int64
	// collecting is set while a collection started by release runs.
	collecting atomic.Bool
}

// newBodyBudget returns a budget of mb MiB whose reservations wait at most wait; nil (no
// bound) when mb <= 0.
func newBodyBudget(mb int, wait time.Duration) *bodyBudget {
	if mb <= 0 {
		return nil
	}
	return &bodyBudget{b: media.NewBudget(0, int64(mb)<<20), wait: wait}
}

// bodyHold is what one request reserved from the budget. Not safe for concurrent use (one
// request reads its body once); release is idempotent. A nil or zero hold reserves nothing.
type bodyHold struct {
	bb  *bodyBudget
	ctx context.Context
	n   int64
}

// hold starts a request's reservation; ctx ends its waits.
func (bb *bodyBudget) hold(ctx context.Context) *bodyHold {
	return &bodyHold{bb: bb, ctx: ctx}
}

// reserve adds n bytes to the request's reservation, waiting up to the budget's wait. One
// request never holds more than the whole budget: a body larger than it (within
// --max-payload-size) waits for the whole budget instead of being refused. Errors: 503
// worker_overload_protection_shed with Retry-After when the budget stayed full, or the
// context's error (*errs.Error 499/504 through contextError).
func (h *bodyHold) reserve(n int64) error {
	if h == nil || h.bb == nil || n <= 0 {
		return nil
	}
	n = min(n, h.bb.b.MaxBytes()-h.n)
	if n <= 0 {
		return nil
	}
	if err := h.bb.b.AcquireBytes(h.ctx, n, h.bb.wait); err != nil {
		if errors.Is(err, media.ErrBudgetBusy) {
			e := errs.New(http.StatusServiceUnavailable, wire.CodeOverloadShed,
				"the gateway's in-flight request-body budget (--max-inflight-body-mb %d) stayed full for %s (this body needs %d MiB more); retry later",
				h.bb.b.MaxBytes()>>20, h.bb.wait, (n+1<<20-1)>>20)
			e.RetryAfterSecs = bodyShedRetryAfterSecs
			return e
		}
		return contextError(h.ctx, "waiting for room in the request-body budget")
	}
	h.n += n
	return nil
}

// release gives the whole reservation back and counts it as garbage, running the collector
// once bodyCollectAfterBytes have been given back since the last time
// (counting bodyGarbageFactor bytes of garbage per body byte).
func (h *bodyHold) release() {
	if h == nil || h.bb == nil || h.n == 0 {
		return
	}
	n := h.n
	h.n = 0
	h.bb.b.ReleaseBytes(n)
	if h.bb.garbage.Add(n*bodyGarbageFactor) >= bodyCollectAfterBytes && h.bb.collecting.CompareAndSwap(false, true) {
		h.bb.garbage.Store(0)
		// In the background: release runs as a response head is committed, and a forced
		// collection would otherwise delay that head (runtime.GC blocks its caller).
		go func() {
			defer h.bb.collecting.Store(false)
			runtime.GC()
		}()
	}
}

// releaseOnCommit wraps w so that the body's reservation is given back (release, which is
// idempotent) as the response head is committed: by then the body has been parsed and its
// legs sent, and only the body itself stays referenced while the answer streams, so the
// budget bounds the requests still being read, parsed or waiting for their first byte,
// not every open stream. Flush and http.ResponseController's other calls (through Unwrap)
// reach the wrapped writer.
func releaseOnCommit(w http.ResponseWriter, release func()) http.ResponseWriter {
	return &commitRelease{ResponseWriter: w, release: release}
}

type commitRelease struct {
	http.ResponseWriter
	release func()
}

// WriteHeader releases on the first non-1xx status, then passes code on.
func (c *commitRelease) WriteHeader(code int) {
	if code < 100 || code > 199 {
		c.release()
	}
	c.ResponseWriter.WriteHeader(code)
}

// Write releases (a first Write commits 200), then passes p on.
func (c *commitRelease) Write(p []byte) (int, error) {
	c.release()
	return c.ResponseWriter.Write(p)
}

// Flush releases (a flush commits 200), then flushes the wrapped writer.
func (c *commitRelease) Flush() { _ = c.FlushError() }

// FlushError is Flush with the wrapped writer's error (http.ResponseController prefers it).
func (c *commitRelease) FlushError() error {
	c.release()
	return http.NewResponseController(c.ResponseWriter).Flush()
}

// Unwrap is the wrapped writer, for http.ResponseController.
func (c *commitRelease) Unwrap() http.ResponseWriter { return c.ResponseWriter }
