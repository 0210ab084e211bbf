package media_test

import (
	"errors"
	"testing"

	"github.com/smg-go/smg/domain/media"
	"github.com/stretchr/testify/require"
)

// Expected sizes come from transformers' qwen2_vl smart_resize run in Python 3 with the
// Qwen2.5-VL defaults (factor 28, 3136..12845056) and with a 256..512-token budget
// (200704..401408).
func TestSmartResizeMatchesHF(t *testing.T) {
	cases := []struct{ h, w, minP, maxP, wantH, wantW int }{
		{100, 100, 3136, 12845056, 112, 112},
		{50, 50, 3136, 12845056, 56, 56},
		{10, 20, 3136, 12845056, 56, 84},         // below min_pixels: scaled up, ceil
		{70, 70, 3136, 12845056, 56, 56},         // 2.5 rounds half to even
		{42, 42, 3136, 12845056, 56, 56},         // 1.5 rounds half to even
		{4000, 4000, 3136, 12845056, 3584, 3584}, // above max_pixels: scaled down, floor
		{480, 640, 3136, 12845056, 476, 644},
		{1080, 1920, 3136, 12845056, 1092, 1932},
		{100, 100, 200704, 401408, 448, 448},
		{10, 20, 200704, 401408, 336, 644},
		{4000, 4000, 200704, 401408, 616, 616},
		{1080, 1920, 200704, 401408, 448, 840},
	}
	for _, c := range cases {
		h, w, err := media.SmartResize(c.h, c.w, 28, c.minP, c.maxP)
		require.NoError(t, err)
		require.Equal(t, [2]int{c.wantH, c.wantW}, [2]int{h, w}, "%dx%d in [%d,%d]", c.h, c.w, c.minP, c.maxP)
	}
}

func TestSmartResizeRejectsExtremeAspect(t *testing.T) {
	_, _, err := media.SmartResize(1, 201, 28, 3136, 12845056)
	require.True(t, errors.Is(err, media.ErrAspectRatio), "%v", err)
	_, _, err = media.SmartResize(1, 200, 28, 3136, 12845056)
	require.NoError(t, err)
	_, _, err = media.SmartResize(0, 5, 28, 3136, 12845056)
	require.Error(t, err)
}

func TestGridAndTokens(t *testing.T) {
	c := media.DefaultQwen25VL()
	g, tok, err := c.Grid(480, 640) // 476x644 → 34x46 patches → 391 tokens
	require.NoError(t, err)
	require.Equal(t, [3]int64{1, 34, 46}, g)
	require.Equal(t, 34*46/4, tok)
	g, tok, err = c.Grid(100, 100)
	require.NoError(t, err)
	require.Equal(t, [3]int64{1, 8, 8}, g)
	require.Equal(t, 16, tok)
}

func TestParsePreprocessorConfig(t *testing.T) {
	c, err := media.ParsePreprocessorConfig([]byte(`{"min_pixels": 200704, "max_pixels": 401408,
		"patch_size": 14, "merge_size": 2, "temporal_patch_size": 2,
		"image_mean": [0.5, 0.5, 0.5], "image_std": [0.25, 0.25, 0.25],
		"image_processor_type": "Qwen2VLImageProcessor"}`))
	require.NoError(t, err)
	require.Equal(t, 200704, c.MinPixels)
	require.Equal(t, 401408, c.MaxPixels)
	require.Equal(t, [3]float32{0.5, 0.5, 0.5}, c.ImageMean)
	require.Equal(t, [3]float32{0.25, 0.25, 0.25}, c.ImageStd)
	require.InDelta(t, 1.0/255, c.RescaleFactor, 1e-9) // absent: default kept

	c, err = media.ParsePreprocessorConfig([]byte(`{"size": {"shortest_edge": 1000, "longest_edge": 2000000}}`))
	require.NoError(t, err)
	require.Equal(t, 1000, c.MinPixels)
	require.Equal(t, 2000000, c.MaxPixels)
	require.Equal(t, 14, c.PatchSize)

	_, err = media.ParsePreprocessorConfig([]byte(`{"patch_size": 0}`))
	require.Error(t, err)
	_, err = media.ParsePreprocessorConfig([]byte(`{`))
	require.Error(t, err)
}
