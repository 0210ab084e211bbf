package pipeline

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/media"
)

func budgetPipeline(mod func(*config.Config)) *Pipeline {
	cfg := config.Default()
	cfg.MediaBudgetWaitMS = 20
	if mod != nil {
		mod(&cfg)
	}
	return New(Deps{Config: cfg})
}

// The pixel values of all images of a request, read from their headers, are held against
// the engine's message limit: over it is 413 payload_too_large naming both sizes.
func TestCheckHeadersRefusesOverTheEngineMessageLimit(t *testing.T) {
	t.Parallel()
	l := newMediaLimits(config.Default())
	small := media.Header{Width: 64, Height: 64, ResizedWidth: 56, ResizedHeight: 56, PixelBytes: 56 * 56 * 24}
	require.NoError(t, l.checkHeaders([]media.Header{small, small}))

	big := media.Header{Width: 8000, Height: 8000, ResizedWidth: 3584, ResizedHeight: 3584, PixelBytes: 3584 * 3584 * 24}
	err := l.checkHeaders([]media.Header{big})
	e, ok := errs.As(err)
	require.True(t, ok, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, e.Status)
	assert.Equal(t, "payload_too_large", e.Code)
	assert.False(t, e.Retryable)
	assert.Contains(t, e.Message, "8000x8000 resized to 3584x3584")
	assert.Contains(t, e.Message, "limit of 4194304 bytes")

	// Several images that fit one by one but not together.
	four := media.Header{Width: 448, Height: 448, ResizedWidth: 448, ResizedHeight: 336, PixelBytes: 448 * 336 * 24}
	assert.Error(t, l.checkHeaders([]media.Header{four, four}))

	off := config.Default()
	off.EngineMaxMessageMB = 0
	require.NoError(t, newMediaLimits(off).checkHeaders([]media.Header{big}), "0 turns the check off")
}

// An image while the budget is full waits, then is shed with 503 and Retry-After; nothing is
// decoded. An image larger than the whole budget is 413 at once.
func TestPrepareBoundedShedsWhenTheBudgetIsFull(t *testing.T) {
	pl := budgetPipeline(func(c *config.Config) { c.MediaMaxConcurrency = 1 })
	proc := media.NewProcessor(media.DefaultQwen25VL())
	raw := pngBytes(t, 64, 64, 7)
	hd, err := proc.Inspect(raw)
	require.NoError(t, err)

	require.NoError(t, pl.media.limits.budget.Acquire(context.Background(), 0, 0)) // the only slot
	before := media.Decodes()
	_, err = pl.prepareBounded(context.Background(), &mediaHold{l: pl.media.limits}, 0, proc, hd, raw)
	e, ok := errs.As(err)
	require.True(t, ok, err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, "worker_overload_protection_shed", e.Code)
	assert.Equal(t, 1, e.RetryAfterSecs)
	assert.Contains(t, e.Message, "media preparation budget")
	assert.Equal(t, before, media.Decodes(), "shed before decoding")

	pl.media.limits.budget.Release(0)
	hold := &mediaHold{l: pl.media.limits}
	it, err := pl.prepareBounded(context.Background(), hold, 0, proc, hd, raw)
	require.NoError(t, err)
	assert.Equal(t, before+1, media.Decodes())
	assert.Equal(t, hd.PixelBytes, 4*int64(len(it.PixelValues)))
	s, n := pl.media.limits.budget.InUse()
	assert.Zero(t, s, "the slot is returned")
	assert.Equal(t, hd.PayloadBytes, n, "the pixel values stay reserved until the attempt ends")
	hold.releaseAll()
	hold.releaseAll()
	s, n = pl.media.limits.budget.InUse()
	assert.Zero(t, s)
	assert.Zero(t, n, "released once")

	tiny := budgetPipeline(func(c *config.Config) { c.MediaMemoryBudgetMB = 1 })
	huge := media.Header{Width: 8000, Height: 8000, DecodeBytes: 1 << 30}
	_, err = tiny.prepareBounded(context.Background(), &mediaHold{l: tiny.media.limits}, 2, proc, huge, pngBytes(t, 8, 8, 1))
	e, ok = errs.As(err)
	require.True(t, ok, err)
	assert.Equal(t, http.StatusRequestEntityTooLarge, e.Status)
	assert.Equal(t, "payload_too_large", e.Code)
	assert.Contains(t, e.Message, "image 2 needs about 1024 MiB to prepare (8000x8000)")
	assert.Equal(t, before+1, media.Decodes())
}
