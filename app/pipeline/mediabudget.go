package pipeline

import (
	"context"
	"errors"
	"net/http"
	"runtime"
	"time"

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
}

func newMediaLimits(cfg config.Config) mediaLimits {
	return mediaLimits{
		messageBytes: int64(cfg.EngineMaxMessageMB) << 20,
		budget:       media.NewBudget(cfg.MediaMaxConcurrency, int64(cfg.MediaMemoryBudgetMB)<<20),
		wait:         time.Duration(cfg.MediaBudgetWaitMS) * time.Millisecond,
	}
}

// collectAfterBytes is the working memory above which a finished preparation runs the
// garbage collector at once: its frames are garbage the moment it returns, and under
// --gogc 400 they would otherwise stay on the heap until it grows to five times its live
// size. A collection costs milliseconds; a decode this large costs far more.
const collectAfterBytes = 64 << 20

// mediaShedRetryAfterSecs is the Retry-After of a request shed for the media budget.
const mediaShedRetryAfterSecs = 1

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
// estimated working memory (waiting up to the budget wait), decodes, releases, and collects
// garbage after a large preparation. Errors are the client's: 413 payload_too_large for an
// image above the whole budget or the pixel limit, 503 worker_overload_protection_shed with
// Retry-After when the budget stayed full, 400 invalid_request for an undecodable image.
func (pl *Pipeline) prepareBounded(ctx context.Context, i int, proc *media.Processor, hd media.Header, raw []byte) (media.Item, error) {
	c := pl.media.cache
	k := c.key(proc, raw)
	if it, ok := c.get(k); ok {
		return it, nil
	}
	l := pl.media.limits
	if err := l.budget.Acquire(ctx, hd.DecodeBytes, l.wait); err != nil {
		switch {
		case errors.Is(err, media.ErrOverBudget):
			return media.Item{}, errs.New(http.StatusRequestEntityTooLarge, wire.CodePayloadTooLarge,
				"image %d (%dx%d) needs about %d MiB to prepare, more than the whole media budget of %d MiB (--media-memory-budget-mb)",
				i, hd.Width, hd.Height, hd.DecodeBytes>>20, l.budget.MaxBytes()>>20)
		case errors.Is(err, media.ErrBudgetBusy):
			e := errs.New(http.StatusServiceUnavailable, wire.CodeOverloadShed,
				"the gateway's media preparation budget stayed full for %s (image %d needs about %d MiB; --media-memory-budget-mb, --media-max-concurrency); retry later",
				l.wait, i, hd.DecodeBytes>>20)
			e.RetryAfterSecs = mediaShedRetryAfterSecs
			return media.Item{}, e
		}
		return media.Item{}, err
	}
	it, err := proc.ProcessImage(raw)
	l.budget.Release(hd.DecodeBytes)
	if hd.DecodeBytes >= collectAfterBytes {
		runtime.GC()
	}
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
