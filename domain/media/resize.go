package media

import (
	"errors"
	"fmt"
	"math"
)

// ErrAspectRatio is returned for an image whose long side is more than 200 times its short
// side (the HF processor's limit).
var ErrAspectRatio = errors.New("media: aspect ratio above 200")

// SmartResize is the Hugging Face Qwen2-VL smart_resize: both sides become multiples of
// factor, the area stays within [minPixels, maxPixels] and the aspect ratio is kept as far as
// possible. Python's round (half to even) is reproduced. Returns (height, width).
func SmartResize(height, width, factor, minPixels, maxPixels int) (int, int, error) {
	if height <= 0 || width <= 0 {
		return 0, 0, fmt.Errorf("media: empty image %dx%d", width, height)
	}
	if float64(max(height, width))/float64(min(height, width)) > 200 {
		return 0, 0, fmt.Errorf("%w: %dx%d", ErrAspectRatio, width, height)
	}
	h, w, f := float64(height), float64(width), float64(factor)
	hBar := int(math.RoundToEven(h/f)) * factor
	wBar := int(math.RoundToEven(w/f)) * factor
	switch {
	case hBar*wBar > maxPixels:
		beta := math.Sqrt(h * w / float64(maxPixels))
		hBar = max(factor, int(math.Floor(h/beta/f))*factor)
		wBar = max(factor, int(math.Floor(w/beta/f))*factor)
	case hBar*wBar < minPixels:
		beta := math.Sqrt(float64(minPixels) / (h * w))
		hBar = int(math.Ceil(h*beta/f)) * factor
		wBar = int(math.Ceil(w*beta/f)) * factor
	}
	return hBar, wBar, nil
}

// Grid returns the patch grid (1, h/patch, w/patch) and the placeholder token count of an
// image of the given size under c, without decoding anything.
func (c ProcessorConfig) Grid(height, width int) ([3]int64, int, error) {
	rh, rw, err := SmartResize(height, width, c.Factor(), c.MinPixels, c.MaxPixels)
	if err != nil {
		return [3]int64{}, 0, err
	}
	g := [3]int64{1, int64(rh / c.PatchSize), int64(rw / c.PatchSize)}
	return g, int(g[0]*g[1]*g[2]) / (c.MergeSize * c.MergeSize), nil
}
