package media

import (
	"encoding/json"
	"fmt"
)

// ProcessorConfig holds the image processor parameters of a Qwen2-VL-style model, as in its
// preprocessor_config.json. Defaults are Qwen2.5-VL's (DefaultQwen25VL).
type ProcessorConfig struct {
	// PatchSize is the vision patch edge in pixels (14).
	PatchSize int
	// TemporalPatchSize is the number of frames per patch (2; an image repeats its frame).
	TemporalPatchSize int
	// MergeSize is the spatial merge edge in patches (2): merge² patches become one token.
	MergeSize int
	// MinPixels and MaxPixels bound the resized area (3136 and 12845056).
	MinPixels, MaxPixels int
	// ImageMean and ImageStd normalize each channel after rescaling (CLIP values).
	ImageMean, ImageStd [3]float32
	// RescaleFactor multiplies the 0..255 values before normalization (1/255), in float64
	// and then rounded to float32 as transformers' rescale does.
	RescaleFactor float64
}

// DefaultQwen25VL is Qwen/Qwen2.5-VL-*-Instruct's preprocessor_config.json.
func DefaultQwen25VL() ProcessorConfig {
	return ProcessorConfig{
		PatchSize: 14, TemporalPatchSize: 2, MergeSize: 2,
		MinPixels: 3136, MaxPixels: 12845056,
		ImageMean:     [3]float32{0.48145466, 0.4578275, 0.40821073},
		ImageStd:      [3]float32{0.26862954, 0.26130258, 0.27577711},
		RescaleFactor: 1.0 / 255,
	}
}

// Factor is the resize granularity in pixels: PatchSize*MergeSize (28 for Qwen2.5-VL).
func (c ProcessorConfig) Factor() int { return c.PatchSize * c.MergeSize }

type rawPreprocessor struct {
	PatchSize         *int      `json:"patch_size"`
	TemporalPatchSize *int      `json:"temporal_patch_size"`
	MergeSize         *int      `json:"merge_size"`
	MinPixels         *int      `json:"min_pixels"`
	MaxPixels         *int      `json:"max_pixels"`
	ImageMean         []float32 `json:"image_mean"`
	ImageStd          []float32 `json:"image_std"`
	RescaleFactor     *float64  `json:"rescale_factor"`
	Size              *rawSize  `json:"size"`
}

type rawSize struct {
	ShortestEdge *int `json:"shortest_edge"`
	LongestEdge  *int `json:"longest_edge"`
}

// ParsePreprocessorConfig reads a preprocessor_config.json over the Qwen2.5-VL defaults:
// fields that are absent keep their default; newer files give the pixel bounds as
// size.shortest_edge / size.longest_edge (min_pixels / max_pixels win when both are there).
// It fails on malformed JSON or non-positive sizes.
func ParsePreprocessorConfig(data []byte) (ProcessorConfig, error) {
	c := DefaultQwen25VL()
	var r rawPreprocessor
	if err := json.Unmarshal(data, &r); err != nil {
		return c, fmt.Errorf("media: preprocessor_config.json: %w", err)
	}
	setInt := func(dst *int, v *int) {
		if v != nil {
			*dst = *v
		}
	}
	if r.Size != nil {
		setInt(&c.MinPixels, r.Size.ShortestEdge)
		setInt(&c.MaxPixels, r.Size.LongestEdge)
	}
	setInt(&c.PatchSize, r.PatchSize)
	setInt(&c.TemporalPatchSize, r.TemporalPatchSize)
	setInt(&c.MergeSize, r.MergeSize)
	setInt(&c.MinPixels, r.MinPixels)
	setInt(&c.MaxPixels, r.MaxPixels)
	if len(r.ImageMean) == 3 {
		copy(c.ImageMean[:], r.ImageMean)
	}
	if len(r.ImageStd) == 3 {
		copy(c.ImageStd[:], r.ImageStd)
	}
	if r.RescaleFactor != nil {
		c.RescaleFactor = *r.RescaleFactor
	}
	if c.PatchSize <= 0 || c.TemporalPatchSize <= 0 || c.MergeSize <= 0 || c.MinPixels <= 0 ||
		c.MaxPixels < c.MinPixels {
		return c, fmt.Errorf("media: preprocessor_config.json: bad sizes %+v", c)
	}
	for _, s := range c.ImageStd {
		if s == 0 {
			return c, fmt.Errorf("media: preprocessor_config.json: image_std has a zero")
		}
	}
	return c, nil
}
