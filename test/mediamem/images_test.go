package mediamem_test

import (
	"bytes"
	"compress/zlib"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text/texttest"
)

// qwen2VLTemplate is Qwen2-VL-7B-Instruct's chat template (tokenizer_config.json): image
// parts render as <|vision_start|><|image_pad|><|vision_end|>.
const qwen2VLTemplate = `{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}{% for message in messages %}{% if loop.first and message['role'] != 'system' %}<|im_start|>system
You are a helpful assistant.<|im_end|>
{% endif %}<|im_start|>{{ message['role'] }}
{% if message['content'] is string %}{{ message['content'] }}<|im_end|>
{% else %}{% for content in message['content'] %}{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}{% set image_count.value = image_count.value + 1 %}{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}<|vision_start|><|image_pad|><|vision_end|>{% elif content['type'] == 'video' or 'video' in content %}{% set video_count.value = video_count.value + 1 %}{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}<|vision_start|><|video_pad|><|vision_end|>{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>
{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// qwenVLDir is a Qwen2-VL-style model folder: Qwen3's tokenizer.json (it has the vision
// tokens) and the Qwen2-VL chat template.
func qwenVLDir(t *testing.T) string {
	t.Helper()
	src := texttest.Dir(t, texttest.Qwen3)
	dir := t.TempDir()
	tok, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	require.NoError(t, err)
	var tc map[string]any
	b, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &tc))
	tc["chat_template"] = qwen2VLTemplate
	b, err = json.Marshal(tc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644))
	return dir
}

// pngChunk appends one PNG chunk (length, type, data, CRC).
func pngChunk(out *bytes.Buffer, typ string, data []byte) {
	_ = binary.Write(out, binary.BigEndian, uint32(len(data)))
	c := crc32.NewIEEE()
	c.Write([]byte(typ))
	c.Write(data)
	out.WriteString(typ)
	out.Write(data)
	_ = binary.Write(out, binary.BigEndian, c.Sum32())
}

// flatPNG is a valid w x h RGB PNG of one flat colour, written row by row so the test never
// holds the pixels: about 250 KB for 8000x8000.
func flatPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	var out bytes.Buffer
	out.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(w))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(h))
	ihdr[8], ihdr[9] = 8, 2 // 8-bit RGB
	pngChunk(&out, "IHDR", ihdr)
	var z bytes.Buffer
	zw, err := zlib.NewWriterLevel(&z, zlib.BestCompression)
	require.NoError(t, err)
	row := make([]byte, 1+3*w)
	for y := 0; y < h; y++ {
		_, _ = zw.Write(row)
	}
	require.NoError(t, zw.Close())
	pngChunk(&out, "IDAT", z.Bytes())
	pngChunk(&out, "IEND", nil)
	return out.Bytes()
}

// storedPNG is a w x h RGB PNG written without compression: about 3*w*h bytes.
func storedPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = byte(i * 7)
	}
	var b bytes.Buffer
	require.NoError(t, (&png.Encoder{CompressionLevel: png.NoCompression}).Encode(&b, img))
	return b.Bytes()
}

// variant is p with a tEXt chunk naming i before IEND: the same pixels, other bytes (so
// another content hash, no cache hit).
func variant(p []byte, i int) []byte {
	iend := len(p) - 12
	var out bytes.Buffer
	out.Write(p[:iend])
	pngChunk(&out, "tEXt", []byte("smg\x00variant "+string(rune('A'+i%26))+string(rune('a'+i/26))))
	out.Write(p[iend:])
	return out.Bytes()
}

func dataURL(p []byte) string { return "data:image/png;base64," + base64.StdEncoding.EncodeToString(p) }
