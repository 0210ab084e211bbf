package media_test

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/media"
)

// bigPNG is a valid w x h RGB PNG of one flat colour, written row by row so the test never
// holds the pixels: a few hundred KB for 8000x8000.
func bigPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	chunk := func(typ string, data []byte) {
		_ = binary.Write(&out, binary.BigEndian, uint32(len(data)))
		c := crc32.NewIEEE()
		c.Write([]byte(typ))
		c.Write(data)
		out.WriteString(typ)
		out.Write(data)
		_ = binary.Write(&out, binary.BigEndian, c.Sum32())
	}
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	chunk("IHDR", ihdr)
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.BestSpeed)
	require.NoError(t, err)
	row := make([]byte, 1+3*w) // filter 0, black
	for y := 0; y < h; y++ {
		_, _ = zw.Write(row)
	}
	require.NoError(t, zw.Close())
	chunk("IDAT", z.Bytes())
	chunk("IEND", nil)
	return out.Bytes()
}

// The header alone gives the size, smart_resize's size and the bytes of the pixel values:
// an 8000x8000 PNG (about 250 KB) is predicted at 308 MB of pixel values without a pixel
// being decoded.
func TestInspectReadsOnlyTheHeader(t *testing.T) {
	raw := bigPNG(t, 8000, 8000)
	t.Logf("8000x8000 PNG: %d bytes", len(raw))
	p := media.NewProcessor(media.DefaultQwen25VL())
	before := media.Decodes()
	h, err := p.Inspect(raw)
	require.NoError(t, err)
	assert.Equal(t, media.Decodes(), before, "Inspect decodes nothing")
	assert.Equal(t, 8000, h.Width)
	assert.Equal(t, 8000, h.Height)
	assert.Equal(t, 3584, h.ResizedWidth, "smart_resize under max_pixels 12845056")
	assert.Equal(t, 3584, h.ResizedHeight)
	assert.EqualValues(t, 3584*3584*3*2*4, h.PixelBytes)
	assert.Greater(t, h.DecodeBytes, int64(2*8000*8000*4), "two full frames at least")
}

// The pixel values Inspect predicts are exactly those ProcessImage prepares.
func TestInspectPredictsProcessImage(t *testing.T) {
	p := media.NewProcessor(media.DefaultQwen25VL())
	raw := encodePNG(t, image.NewNRGBA(image.Rect(0, 0, 300, 170)))
	h, err := p.Inspect(raw)
	require.NoError(t, err)
	before := media.Decodes()
	it, err := p.ProcessImage(raw)
	require.NoError(t, err)
	assert.Equal(t, before+1, media.Decodes())
	assert.EqualValues(t, 4*len(it.PixelValues), h.PixelBytes)
	assert.Equal(t, it.ResizedWidth, h.ResizedWidth)
	assert.Equal(t, it.ResizedHeight, h.ResizedHeight)
}

// Above MaxDecodePixels, or not an image: refused from the header, nothing decoded.
func TestInspectRefusesBeforeDecoding(t *testing.T) {
	p := &media.Processor{Config: media.DefaultQwen25VL(), MaxDecodePixels: 1000 * 1000}
	before := media.Decodes()
	_, err := p.ProcessImage(bigPNG(t, 2000, 1000))
	require.Error(t, err)
	assert.True(t, errors.Is(err, media.ErrImageTooLarge), err)
	assert.Contains(t, err.Error(), "2000x1000")
	_, err = p.ProcessImage([]byte("not an image at all"))
	assert.True(t, errors.Is(err, media.ErrUnsupportedImage), err)
	assert.Equal(t, before, media.Decodes())
}
