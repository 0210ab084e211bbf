package media

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/draw"
	_ "image/gif"  // GIF decoder (first frame)
	_ "image/jpeg" // JPEG decoder
	_ "image/png"  // PNG decoder
	"sync/atomic"

	_ "golang.org/x/image/webp" // WebP decoder
)

// ErrUnsupportedImage is returned for bytes that are not a PNG, JPEG, GIF or WebP image, or
// that do not decode.
var ErrUnsupportedImage = errors.New("media: not a decodable PNG, JPEG, GIF or WebP image")

// ErrImageTooLarge is returned when the declared image size is above Processor.MaxDecodePixels.
var ErrImageTooLarge = errors.New("media: image too large to decode")

// decodes counts the images ProcessImage decoded (Decodes).
var decodes atomic.Int64

// Decodes returns how many images ProcessImage has decoded in this process: a refusal from
// the header (Inspect) decodes nothing, which tests read here.
func Decodes() int64 { return decodes.Load() }

// DefaultMaxDecodePixels bounds the decoded area (width*height) of one image: 64 Mpixel.
const DefaultMaxDecodePixels = 64 << 20

// Processor turns raw image bytes into prepared Items for a Qwen2-VL-family model.
type Processor struct {
	// Config holds the model's preprocessor parameters.
	Config ProcessorConfig
	// MaxDecodePixels bounds width*height before decoding; 0 means DefaultMaxDecodePixels.
	MaxDecodePixels int
}

// NewProcessor returns a Processor for c.
func NewProcessor(c ProcessorConfig) *Processor { return &Processor{Config: c} }

// ProcessImage decodes raw (PNG, JPEG, GIF first frame, WebP), composites any alpha over
// white (transformers' convert_to_rgb), resizes it to smart_resize's size exactly as
// Pillow's BICUBIC does (the HF processor resizes through PIL), rescales and normalizes
// each channel, repeats the frame to the temporal patch size and flattens the patches in the
// HF order: rows (t, h/merge, w/merge, merge_h, merge_w), columns (channel, temporal, patch_h,
// patch_w). Errors: ErrUnsupportedImage, ErrImageTooLarge, ErrAspectRatio.
func (p *Processor) ProcessImage(raw []byte) (Item, error) {
	c := p.Config
	hd, err := p.Inspect(raw)
	if err != nil {
		return Item{}, err
	}
	rh, rw := hd.ResizedHeight, hd.ResizedWidth
	decodes.Add(1)
	img, _, err := image.Decode(bytes.NewReader(raw))
	if err != nil {
		return Item{}, fmt.Errorf("%w: %v", ErrUnsupportedImage, err)
	}
	b := img.Bounds()
	resized := resizeRGB(img, rw, rh)
	sum := sha256.Sum256(raw)
	it := Item{
		Modality: ModalityImage, Hash: hex.EncodeToString(sum[:]),
		Width: b.Dx(), Height: b.Dy(), ResizedWidth: rw, ResizedHeight: rh,
	}
	it.PixelValues, it.Shape, it.GridTHW = c.patchify(resized)
	it.Tokens = int(it.GridTHW[0]*it.GridTHW[1]*it.GridTHW[2]) / (c.MergeSize * c.MergeSize)
	return it, nil
}

// resizeRGB composites img over white (transformers' convert_to_rgb) and resizes it to
// w x h as Pillow's BICUBIC does (bicubicResize).
func resizeRGB(img image.Image, w, h int) *image.RGBA {
	b := img.Bounds()
	rgb := image.NewRGBA(image.Rect(0, 0, b.Dx(), b.Dy()))
	draw.Draw(rgb, rgb.Bounds(), &image.Uniform{C: color.White}, image.Point{}, draw.Src)
	draw.Draw(rgb, rgb.Bounds(), img, b.Min, draw.Over)
	return bicubicResize(rgb, w, h)
}

// patchify flattens one RGBA frame (repeated to the temporal patch size) into patch rows.
func (c ProcessorConfig) patchify(img *image.RGBA) ([]float32, [2]int64, [3]int64) {
	P, T, M := c.PatchSize, c.TemporalPatchSize, c.MergeSize
	w, h := img.Bounds().Dx(), img.Bounds().Dy()
	gh, gw := h/P, w/P
	cols := 3 * T * P * P
	rows := gh * gw
	out := make([]float32, rows*cols)
	var lut [3][256]float32
	for ch := 0; ch < 3; ch++ {
		for v := 0; v < 256; v++ {
			lut[ch][v] = (float32(float64(v)*c.RescaleFactor) - c.ImageMean[ch]) / c.ImageStd[ch] // float64 rescale, float32 normalize (transformers)
		}
	}
	row := 0
	for bh := 0; bh < gh/M; bh++ {
		for bw := 0; bw < gw/M; bw++ {
			for mh := 0; mh < M; mh++ {
				for mw := 0; mw < M; mw++ {
					y0, x0 := (bh*M+mh)*P, (bw*M+mw)*P
					base := row * cols
					for ch := 0; ch < 3; ch++ {
						for tp := 0; tp < T; tp++ {
							off := base + (ch*T+tp)*P*P
							for py := 0; py < P; py++ {
								pix := img.Pix[(y0+py)*img.Stride+x0*4:]
								for px := 0; px < P; px++ {
									out[off+py*P+px] = lut[ch][pix[px*4+ch]]
								}
							}
						}
					}
					row++
				}
			}
		}
	}
	return out, [2]int64{int64(rows), int64(cols)}, [3]int64{1, int64(gh), int64(gw)}
}
