package media

import (
	"bytes"
	"image"
	_ "image/png"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// The resize step against PIL 9.4 Image.resize(BICUBIC), which transformers' Qwen2-VL
// processor runs before rescale/normalize (testdata/gen_pil.py): an upscale and a downscale,
// bit-exact.
func TestResizeMatchesPILBicubic(t *testing.T) {
	for _, c := range []struct {
		in, out string
		w, h    int
	}{{"pil_up_in.png", "pil_up_84x56.rgb", 84, 56}, {"pil_down_in.png", "pil_down_168x112.rgb", 168, 112}} {
		raw, err := os.ReadFile("testdata/" + c.in)
		require.NoError(t, err)
		want, err := os.ReadFile("testdata/" + c.out)
		require.NoError(t, err)
		img, _, err := image.Decode(bytes.NewReader(raw))
		require.NoError(t, err)
		got := resizeRGB(img, c.w, c.h)
		maxDiff, sum := 0, 0
		for y := 0; y < c.h; y++ {
			for x := 0; x < c.w; x++ {
				for ch := 0; ch < 3; ch++ {
					d := int(got.Pix[y*got.Stride+4*x+ch]) - int(want[(y*c.w+x)*3+ch])
					if d < 0 {
						d = -d
					}
					maxDiff, sum = max(maxDiff, d), sum+d
				}
			}
		}
		mean := float64(sum) / float64(3*c.w*c.h)
		t.Logf("%s: max |diff| %d, mean %.3f levels", c.in, maxDiff, mean)
		require.Zero(t, maxDiff, "%s: bit-exact with Pillow", c.in)
	}
}

// The whole chain against transformers' Qwen2-VL processor (rescale, normalize, temporal
// repeat, reshape/transpose), reproduced in numpy by testdata/gen_pil.py: bit-exact float32.
func TestProcessImageMatchesHFPixelValues(t *testing.T) {
	raw, err := os.ReadFile("testdata/pil_up_in.png")
	require.NoError(t, err)
	want, err := os.ReadFile("testdata/hf_up_pixel_values_24x1176.f32")
	require.NoError(t, err)
	it, err := NewProcessor(DefaultQwen25VL()).ProcessImage(raw)
	require.NoError(t, err)
	require.Equal(t, [2]int64{24, 1176}, it.Shape)
	require.Equal(t, [3]int64{1, 4, 6}, it.GridTHW)
	require.Equal(t, want, it.PixelBytes())
}
