package pipeline

import (
	"bytes"
	"image"
	"image/png"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/media"
)

func pngBytes(t *testing.T, w, h int, v uint8) []byte {
	t.Helper()
	img := image.NewGray(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = v + uint8(i)
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func TestMediaCacheReusesAndBoundsBytes(t *testing.T) {
	p := media.NewProcessor(media.DefaultQwen25VL())
	a, b := pngBytes(t, 56, 56, 1), pngBytes(t, 56, 56, 2) // 16 rows x 1176 values = 75264 bytes each
	c := newMediaCache(100_000)
	i1, err := c.prepare(p, a)
	require.NoError(t, err)
	i2, err := c.prepare(p, a)
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.hits)
	assert.Equal(t, i1.Hash, i2.Hash)
	assert.Equal(t, &i1.PixelValues[0], &i2.PixelValues[0], "the same prepared item")

	// A second image does not fit beside the first: the older one goes.
	_, err = c.prepare(p, b)
	require.NoError(t, err)
	assert.EqualValues(t, 75264, c.bytes)
	assert.Equal(t, 1, c.lru.Len())
	_, err = c.prepare(p, a)
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.hits, "a was evicted")

	// Another processor (another model's config) never shares entries.
	_, err = c.prepare(media.NewProcessor(media.DefaultQwen25VL()), a)
	require.NoError(t, err)
	assert.EqualValues(t, 1, c.hits)

	// Errors are not cached; items larger than the budget are not kept.
	_, err = c.prepare(p, []byte("nope"))
	require.Error(t, err)
	small := newMediaCache(10)
	_, err = small.prepare(p, a)
	require.NoError(t, err)
	assert.Zero(t, small.lru.Len())
}
