package media

import (
	"bytes"
	"fmt"
	"image"
)

// Header is what an image's header tells before a pixel is decoded: its size, the size
// smart_resize gives it, and from these the bytes its preparation and its pixel values take.
type Header struct {
	// Width and Height are the declared image size in pixels.
	Width, Height int
	// ResizedWidth and ResizedHeight are smart_resize's size (multiples of patch*merge).
	ResizedWidth, ResizedHeight int
	// PixelBytes is the size in bytes of the item's pixel_values as the prefill message
	// carries them: ResizedWidth*ResizedHeight*3 channels*TemporalPatchSize float32 values.
	PixelBytes int64
	// DecodeBytes estimates the peak working memory of preparing the item, in bytes: the
	// decoded frame and its RGB copy (Width*Height*4 each), the horizontal resize pass
	// (ResizedWidth*Height*4), the resized frame (ResizedWidth*ResizedHeight*4) and
	// PayloadBytes.
	DecodeBytes int64
	// PayloadBytes is what the prepared item keeps while its request runs: the float32
	// patch rows, their little-endian copy and the marshalled gRPC message (3*PixelBytes).
	PayloadBytes int64
}

// Inspect reads only raw's header (image.DecodeConfig) and returns the Header of the item
// ProcessImage would prepare, without decoding the image. Errors: ErrUnsupportedImage (no
// PNG, JPEG, GIF or WebP header), ErrImageTooLarge (width*height above MaxDecodePixels),
// ErrAspectRatio.
func (p *Processor) Inspect(raw []byte) (Header, error) {
	c := p.Config
	limit := p.MaxDecodePixels
	if limit <= 0 {
		limit = DefaultMaxDecodePixels
	}
	cfg, _, err := image.DecodeConfig(bytes.NewReader(raw))
	if err != nil {
		return Header{}, fmt.Errorf("%w: %v", ErrUnsupportedImage, err)
	}
	w, h := int64(cfg.Width), int64(cfg.Height)
	if w <= 0 || h <= 0 || w*h > int64(limit) {
		return Header{}, fmt.Errorf("%w: %dx%d is %d pixels (limit %d)", ErrImageTooLarge, w, h, w*h, limit)
	}
	rh, rw, err := SmartResize(cfg.Height, cfg.Width, c.Factor(), c.MinPixels, c.MaxPixels)
	if err != nil {
		return Header{}, err
	}
	hd := Header{Width: cfg.Width, Height: cfg.Height, ResizedWidth: rw, ResizedHeight: rh}
	hd.PixelBytes = int64(rw) * int64(rh) * 3 * int64(c.TemporalPatchSize) * 4
	hd.PayloadBytes = 3 * hd.PixelBytes
	hd.DecodeBytes = 2*w*h*4 + int64(rw)*h*4 + int64(rw)*int64(rh)*4 + hd.PayloadBytes
	return hd, nil
}
