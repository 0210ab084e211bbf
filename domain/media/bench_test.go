package media_test

import (
	"image"
	"testing"

	"github.com/smg-go/smg/domain/media"
)

// BenchmarkProcessImage prepares a 1024x768 PNG under the Qwen2.5-VL defaults (smart_resize
// → 1036x756, 74x54 = 3996 patch rows, 999 tokens): decode, resize, normalize, patchify.
func BenchmarkProcessImage(b *testing.B) {
	img := image.NewRGBA(image.Rect(0, 0, 1024, 768))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 7)
	}
	raw := encodePNG(b, img)
	p := media.NewProcessor(media.DefaultQwen25VL())
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := p.ProcessImage(raw); err != nil {
			b.Fatal(err)
		}
	}
}
