package media_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"image"
	"image/color"
	"image/gif"
	"image/jpeg"
	"image/png"
	"math"
	"testing"

	"github.com/smg-go/smg/domain/media"
	"github.com/stretchr/testify/require"
)

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func norm(c media.ProcessorConfig, ch int, v uint8) float32 {
	return (float32(float64(v)*c.RescaleFactor) - c.ImageMean[ch]) / c.ImageStd[ch]
}

// A 56x56 image needs no resize (56 = 2*28 and 56² = min_pixels), so every value can be
// checked against its source pixel under HF's reshape/transpose:
// rows (t, h/merge, w/merge, merge_h, merge_w), columns (channel, temporal, patch_h, patch_w).
func TestProcessImagePatchOrder(t *testing.T) {
	img := image.NewNRGBA(image.Rect(0, 0, 56, 56))
	for y := 0; y < 56; y++ {
		for x := 0; x < 56; x++ {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x * 4), G: uint8(y * 4), B: uint8((x + 3*y) % 256), A: 255})
		}
	}
	raw := encodePNG(t, img)
	c := media.DefaultQwen25VL()
	it, err := media.NewProcessor(c).ProcessImage(raw)
	require.NoError(t, err)
	require.Equal(t, [3]int64{1, 4, 4}, it.GridTHW)
	require.Equal(t, [2]int64{16, 3 * 2 * 14 * 14}, it.Shape)
	require.Equal(t, 4, it.Tokens)
	require.Len(t, it.PixelValues, 16*1176)
	sum := sha256.Sum256(raw)
	require.Equal(t, hex.EncodeToString(sum[:]), it.Hash)
	require.Equal(t, media.ModalityImage, it.Modality)

	for gy := 0; gy < 4; gy++ {
		for gx := 0; gx < 4; gx++ {
			row := ((gy/2)*2+gx/2)*4 + (gy%2)*2 + gx%2
			for ch := 0; ch < 3; ch++ {
				for tp := 0; tp < 2; tp++ {
					for py := 0; py < 14; py += 5 {
						for px := 0; px < 14; px += 3 {
							p := img.NRGBAAt(gx*14+px, gy*14+py)
							src := [3]uint8{p.R, p.G, p.B}[ch]
							col := ((ch*2+tp)*14+py)*14 + px
							require.Equal(t, norm(c, ch, src), it.PixelValues[row*1176+col],
								"patch (%d,%d) ch %d t %d (%d,%d)", gy, gx, ch, tp, py, px)
						}
					}
				}
			}
		}
	}
	b := it.PixelBytes()
	require.Len(t, b, 4*len(it.PixelValues))
	require.Equal(t, it.PixelValues[5], math.Float32frombits(binary.LittleEndian.Uint32(b[20:])))
}

func TestProcessImageResizesAndFlattensAlpha(t *testing.T) {
	// 100x100 → 112x112 (8x8 patches, 16 tokens); a constant colour stays constant under the
	// bicubic filter, and a fully transparent image becomes white.
	img := image.NewNRGBA(image.Rect(0, 0, 100, 100))
	c := media.DefaultQwen25VL()
	it, err := media.NewProcessor(c).ProcessImage(encodePNG(t, img)) // all (0,0,0,0)
	require.NoError(t, err)
	require.Equal(t, [3]int64{1, 8, 8}, it.GridTHW)
	require.Equal(t, 16, it.Tokens)
	require.Equal(t, [2]int64{64, 1176}, it.Shape)
	require.Equal(t, 112, it.ResizedWidth)
	require.Equal(t, 100, it.Width)
	for i, v := range it.PixelValues {
		ch := (i % 1176) / (2 * 196)
		require.InDelta(t, norm(c, ch, 255), v, 1e-6, "value %d", i)
	}
}

func TestProcessImageFormats(t *testing.T) {
	img := image.NewRGBA(image.Rect(0, 0, 200, 150))
	for i := range img.Pix {
		img.Pix[i] = uint8(i)
	}
	var jb, gb bytes.Buffer
	require.NoError(t, jpeg.Encode(&jb, img, nil))
	require.NoError(t, gif.Encode(&gb, img, nil))
	p := media.NewProcessor(media.DefaultQwen25VL())
	for name, raw := range map[string][]byte{"jpeg": jb.Bytes(), "gif": gb.Bytes(), "png": encodePNG(t, img)} {
		it, err := p.ProcessImage(raw)
		require.NoError(t, err, name)
		require.Equal(t, [3]int64{1, 10, 14}, it.GridTHW, name) // 140x196 per smart_resize
		require.Equal(t, 35, it.Tokens, name)
	}
}

func TestProcessImageErrors(t *testing.T) {
	p := media.NewProcessor(media.DefaultQwen25VL())
	_, err := p.ProcessImage([]byte("not an image"))
	require.True(t, errors.Is(err, media.ErrUnsupportedImage), "%v", err)

	p.MaxDecodePixels = 100 * 99
	_, err = p.ProcessImage(encodePNG(t, image.NewGray(image.Rect(0, 0, 100, 100))))
	require.True(t, errors.Is(err, media.ErrImageTooLarge), "%v", err)

	p.MaxDecodePixels = 0
	_, err = p.ProcessImage(encodePNG(t, image.NewGray(image.Rect(0, 0, 402, 2))))
	require.True(t, errors.Is(err, media.ErrAspectRatio), "%v", err)
}
