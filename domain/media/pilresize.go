package media

import (
	"image"
	"math"
)

// The resize step of transformers' Qwen2-VL image processor is PIL's
// Image.resize(size, resample=BICUBIC) on the 8-bit RGB image. bicubicResize reproduces
// Pillow's ImagingResample (libImaging/Resample.c) exactly: the a = -0.5 cubic with support
// 2 scaled by the downscale factor, window bounds rounded and clipped to the image, weights
// normalized then quantized to 22 fractional bits, a horizontal pass then a vertical pass,
// each rounded and clipped to 8 bits. Verified against Pillow 9.4 (testdata/gen_pil.py).

const pilPrecisionBits = 32 - 8 - 2

func pilBicubic(x float64) float64 {
	const a = -0.5
	if x < 0 {
		x = -x
	}
	if x < 1 {
		return ((a+2)*x-(a+3))*x*x + 1
	}
	if x < 2 {
		return (((x-5)*x+8)*x - 4) * a
	}
	return 0
}

// pilCoeffs is precompute_coeffs + normalize_coeffs_8bpc for one axis: per output index
// the first input index, the window length and the fixed-point weights (ksize apart).
func pilCoeffs(inSize, outSize int) (bounds []int, kk []int32, ksize int) {
	scale := float64(inSize) / float64(outSize)
	filterscale := max(scale, 1)
	support := 2 * filterscale
	ksize = int(math.Ceil(support))*2 + 1
	bounds = make([]int, 2*outSize)
	kk = make([]int32, outSize*ksize)
	pre := make([]float64, ksize)
	for xx := 0; xx < outSize; xx++ {
		center := (float64(xx) + 0.5) * scale
		ss := 1 / filterscale
		xmin := int(center - support + 0.5)
		if xmin < 0 {
			xmin = 0
		}
		xmax := int(center + support + 0.5)
		if xmax > inSize {
			xmax = inSize
		}
		xmax -= xmin
		ww := 0.0
		for x := 0; x < xmax; x++ {
			w := pilBicubic((float64(x+xmin) - center + 0.5) * ss)
			pre[x] = w
			ww += w
		}
		for x := 0; x < ksize; x++ {
			v := 0.0
			if x < xmax && ww != 0 {
				v = pre[x] / ww
			}
			if v < 0 {
				kk[xx*ksize+x] = int32(-0.5 + v*(1<<pilPrecisionBits))
			} else {
				kk[xx*ksize+x] = int32(0.5 + v*(1<<pilPrecisionBits))
			}
		}
		bounds[2*xx], bounds[2*xx+1] = xmin, xmax
	}
	return bounds, kk, ksize
}

func clip8(v int32) uint8 {
	if v >= 1<<pilPrecisionBits<<8 {
		return 255
	}
	if v <= 0 {
		return 0
	}
	return uint8(v >> pilPrecisionBits)
}

// bicubicResize resizes an RGBA image (alpha ignored: the source is opaque) to w x h as
// Pillow's BICUBIC does; the same size returns src.
func bicubicResize(src *image.RGBA, w, h int) *image.RGBA {
	sw, sh := src.Bounds().Dx(), src.Bounds().Dy()
	if w == sw && h == sh {
		return src
	}
	tmp := src
	if w != sw {
		bounds, kk, ksize := pilCoeffs(sw, w)
		tmp = image.NewRGBA(image.Rect(0, 0, w, sh))
		for y := 0; y < sh; y++ {
			in := src.Pix[y*src.Stride:]
			out := tmp.Pix[y*tmp.Stride:]
			for xx := 0; xx < w; xx++ {
				xmin, n := bounds[2*xx], bounds[2*xx+1]
				k := kk[xx*ksize:]
				s0, s1, s2 := int32(1<<(pilPrecisionBits-1)), int32(1<<(pilPrecisionBits-1)), int32(1<<(pilPrecisionBits-1))
				for x := 0; x < n; x++ {
					p := in[(x+xmin)*4:]
					s0 += int32(p[0]) * k[x]
					s1 += int32(p[1]) * k[x]
					s2 += int32(p[2]) * k[x]
				}
				o := out[xx*4:]
				o[0], o[1], o[2], o[3] = clip8(s0), clip8(s1), clip8(s2), 255
			}
		}
	}
	if h == sh {
		return tmp
	}
	bounds, kk, ksize := pilCoeffs(sh, h)
	out := image.NewRGBA(image.Rect(0, 0, w, h))
	for yy := 0; yy < h; yy++ {
		ymin, n := bounds[2*yy], bounds[2*yy+1]
		k := kk[yy*ksize:]
		o := out.Pix[yy*out.Stride:]
		for xx := 0; xx < w; xx++ {
			s0, s1, s2 := int32(1<<(pilPrecisionBits-1)), int32(1<<(pilPrecisionBits-1)), int32(1<<(pilPrecisionBits-1))
			for y := 0; y < n; y++ {
				p := tmp.Pix[(y+ymin)*tmp.Stride+xx*4:]
				s0 += int32(p[0]) * k[y]
				s1 += int32(p[1]) * k[y]
				s2 += int32(p[2]) * k[y]
			}
			q := o[xx*4:]
			q[0], q[1], q[2], q[3] = clip8(s0), clip8(s1), clip8(s2), 255
		}
	}
	return out
}
