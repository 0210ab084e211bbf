package pipeline

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/adapters/mediafetch"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/media"
	"github.com/smg-go/smg/domain/wire"
)

// mediaLimits are the bounds of gateway-side media preparation (--engine-max-message-mb,
// --media-max-concurrency, --media-memory-budget-mb, --media-budget-wait-ms).
type mediaLimits struct {
	// messageBytes is the engines' gRPC receive limit; 0 = no check.
	messageBytes int64
	budget       *media.Budget
	wait         time.Duration
	// garbage counts the bytes of media memory given up since the last collection.
	garbage *atomic.Int64
}

func newMediaLimits(cfg config.Config) mediaLimits {
	return mediaLimits{
		messageBytes: int64(cfg.EngineMaxMessageMB) << 20,
		budget:       media.NewBudget(cfg.MediaMaxConcurrency, int64(cfg.MediaMemoryBudgetMB)<<20),
		wait:         time.Duration(cfg.MediaBudgetWaitMS) * time.Millisecond,
		garbage:      new(atomic.Int64),
	}
}

// discarded counts n bytes of media memory (decode frames, fetched images, pixel values)
// that just became garbage, and runs the collector once collectAfterBytes have piled up
// since the last time: media garbage is so bounded by the budget, not left to --gogc
// (400 %: five times the live heap) or a soft memory limit far above the budget.
func (l mediaLimits) discarded(n int64) {
	if n <= 0 || l.garbage.Add(n) < collectAfterBytes {
		return
	}
	l.garbage.Store(0)
	runtime.GC()
}

// collectAfterBytes is the media garbage (bytes) after which the collector runs at once
// (mediaLimits.discarded). A collection costs milliseconds; preparing this much media costs
// far more.
const collectAfterBytes = 64 << 20

// mediaShedRetryAfterSecs is the Retry-After of a request shed for the media budget.
const mediaShedRetryAfterSecs = 1

// fetchReserve is the budget bytes reserved for one fetch before its size is known: the
// fetcher's per-item limit (mediafetch.DefaultMaxBytes), shrunk to the bytes received.
const fetchReserve = mediafetch.DefaultMaxBytes

// mediaHold is the budget bytes one request holds without a slot: fetched images until
// they are prepared, prepared pixel values until the attempt ends. Safe for concurrent use.
type mediaHold struct {
	l mediaLimits
	n atomic.Int64
}

// acquire reserves n bytes for the request, shedding as Budget.Acquire does.
func (h *mediaHold) acquire(ctx context.Context, i int, n int64, what string) error {
	if err := h.l.budget.AcquireBytes(ctx, n, h.l.wait); err != nil {
		return budgetError(h.l, i, n, what, err)
	}
	h.n.Add(n)
	return nil
}

// add counts n bytes the request holds (kept by a Shrink).
func (h *mediaHold) add(n int64) { h.n.Add(n) }

// release returns n of the request's bytes; garbage says whether they were allocated
// (and are now garbage) or only reserved.
func (h *mediaHold) release(n int64, garbage bool) {
	h.n.Add(-n)
	h.l.budget.ReleaseBytes(n)
	if garbage {
		h.l.discarded(n)
	}
}

// releaseAll returns every byte the request still holds, as garbage; safe to call more than
// once, and on a nil hold.
func (h *mediaHold) releaseAll() {
	if h == nil {
		return
	}
	n := h.n.Swap(0)
	h.l.budget.ReleaseBytes(n)
	h.l.discarded(n)
}

// budgetError is the client error of a budget reservation that failed: 413 for one larger
// than the whole budget, 503 with Retry-After for a budget that stayed full, else err.
func budgetError(l mediaLimits, i int, n int64, what string, err error) error {
	switch {
	case errors.Is(err, media.ErrOverBudget):
		return errs.New(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge,
			"image %d needs about %d MiB to %s, more than the whole media budget of %d MiB (--media-memory-budget-mb)",
			i, n>>20, what, l.budget.MaxBytes()>>20)
	case errors.Is(err, media.ErrBudgetBusy):
		e := errs.New(http.StatusServiceUnavailable, wire.CodeOverloadShed,
			"the gateway's media preparation budget stayed full for %s (image %d needs about %d MiB to %s; --media-memory-budget-mb, --media-max-concurrency); retry later",
			l.wait, i, n>>20, what)
		e.RetryAfterSecs = mediaShedRetryAfterSecs
		return e
	}
	return err
}

// checkHeaders refuses, from the images' headers alone, a request the engine could not
// receive: 413 payload_too_large when the pixel values of all its images exceed the
// engine's gRPC message limit, naming both sizes.
func (l mediaLimits) checkHeaders(hds []media.Header) error {
	if l.messageBytes <= 0 {
		return nil
	}
	var total int64
	for _, h := range hds {
		total += h.PixelBytes
	}
	if total <= l.messageBytes {
		return nil
	}
	first := hds[0]
	return errs.New(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge,
		"the images' pixel values take %d bytes (image 0: %dx%d resized to %dx%d), more than the engine's gRPC message limit of %d bytes (--engine-max-message-mb %d); send smaller images",
		total, first.Width, first.Height, first.ResizedWidth, first.ResizedHeight, l.messageBytes, l.messageBytes>>20)
}

// prepareBounded prepares one image under the media budget: it reserves the header's
// estimated working memory and a slot (waiting up to the budget wait), decodes, and returns
// the slot and all but the payload, which the request's hold keeps until the attempt ends. A cached item reserves only its payload.
// Errors are the client's: 413 payload_too_large for an image above the whole budget,
// 503 worker_overload_protection_shed with Retry-After when the budget stayed full, 400
// invalid_request for an undecodable image.
func (pl *Pipeline) prepareBounded(ctx context.Context, hold *mediaHold, i int, proc *media.Processor, hd media.Header, raw []byte) (media.Item, error) {
	c := pl.media.cache
	l := pl.media.limits
	k := c.key(proc, raw)
	if it, ok := c.get(k); ok {
		if err := hold.acquire(ctx, i, hd.PayloadBytes, "send"); err != nil {
			return media.Item{}, err
		}
		return it, nil
	}
	if err := l.budget.Acquire(ctx, hd.DecodeBytes, l.wait); err != nil {
		return media.Item{}, budgetError(l, i, hd.DecodeBytes, fmt.Sprintf("prepare (%dx%d)", hd.Width, hd.Height), err)
	}
	it, err := proc.ProcessImage(raw)
	keep := hd.PayloadBytes
	if err != nil {
		keep = 0
	}
	l.budget.Shrink(hd.DecodeBytes, keep)
	hold.add(keep)
	l.discarded(hd.DecodeBytes - keep)
	if err != nil {
		return media.Item{}, imageError(i, err)
	}
	c.put(k, it)
	return it, nil
}

// imageError is the client error of an image that was refused or did not decode.
func imageError(i int, err error) error {
	if errors.Is(err, media.ErrImageTooLarge) {
		return errs.New(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge, "image %d: %v", i, err)
	}
	return errs.New(http.StatusBadRequest, wire.CodeInvalidRequest, "image %d: %v", i, err)
}
