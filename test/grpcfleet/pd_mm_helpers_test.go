package grpcfleet_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/media"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim/grpcsim"
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

// vlPreprocessor raises min_pixels above the Qwen2.5-VL default so a test can tell the
// gateway read the model's preprocessor_config.json: a 64x48 image takes 4 tokens under
// the defaults and 12 under this file (smart_resize → 84x112).
const vlPreprocessor = `{"min_pixels": 6272, "max_pixels": 12845056, "patch_size": 14, "temporal_patch_size": 2,
 "merge_size": 2, "image_mean": [0.48145466, 0.4578275, 0.40821073], "image_std": [0.26862954, 0.26130258, 0.27577711],
 "image_processor_type": "Qwen2VLImageProcessor"}`

var (
	vlOnce  sync.Once
	vlDir   string
	vlModel *text.Model
	vlErr   error
)

// qwenVL is a Qwen2-VL-style model folder: Qwen3's tokenizer.json (it has the vision
// tokens), the Qwen2-VL chat template and vlPreprocessor; loaded once per test binary.
func qwenVL(t *testing.T) (*text.Model, string) {
	t.Helper()
	src := texttest.Dir(t, texttest.Qwen3)
	vlOnce.Do(func() {
		dir, err := os.MkdirTemp("", "smg-qwen-vl-")
		if err != nil {
			vlErr = err
			return
		}
		tok, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
		if err != nil {
			vlErr = err
			return
		}
		var tc map[string]any
		b, _ := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
		if vlErr = json.Unmarshal(b, &tc); vlErr != nil {
			return
		}
		tc["chat_template"] = qwen2VLTemplate
		b, _ = json.Marshal(tc)
		for name, data := range map[string][]byte{"tokenizer.json": tok, "tokenizer_config.json": b, "preprocessor_config.json": []byte(vlPreprocessor)} {
			if vlErr = os.WriteFile(filepath.Join(dir, name), data, 0o644); vlErr != nil {
				return
			}
		}
		vlDir = dir
		vlModel, vlErr = text.LoadModel(text.OSFiles{}, dir, text.LoadOptions{})
	})
	require.NoError(t, vlErr)
	return vlModel, vlDir
}

// mmFleet is pdFleet serving the Qwen-VL fixture: the simulators hand out its folder as
// their tokenizer_path (so the gateway finds preprocessor_config.json there).
func mmFleet(t *testing.T, engine string, mod func(role string, c *grpcsim.Config), cfgMod func(*config.Config)) (*fleet.Gateway, *grpcsim.Server, *grpcsim.Server) {
	t.Helper()
	m, dir := qwenVL(t)
	return startPDIn(t, dir, engine, mod, cfgMod, fx.Decorate(func(r *text.Registry) *text.Registry { r.Put(pdModel, m); return r }))
}

// testPNG is a w x h PNG with a pattern seeded by seed (different seeds, different pixels).
func testPNG(t *testing.T, w, h int, seed uint8) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x*5) + seed, G: uint8(y*7) ^ seed, B: uint8(x*y) + 3*seed, A: 255})
		}
	}
	var b bytes.Buffer
	require.NoError(t, png.Encode(&b, img))
	return b.Bytes()
}

func dataURL(raw []byte) string {
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(raw)
}

func sha(raw []byte) string {
	s := sha256.Sum256(raw)
	return hex.EncodeToString(s[:])
}

// mmMessages is one user message with the images (as URLs) and then a question.
func mmMessages(q string, urls ...string) []map[string]any {
	var parts []any
	for _, u := range urls {
		parts = append(parts, map[string]any{"type": "image_url", "image_url": map[string]string{"url": u}})
	}
	parts = append(parts, map[string]any{"type": "text", "text": q})
	return []map[string]any{{"role": "user", "content": parts}}
}

// mmExpect is what the gateway must send for mmMessages with images raws: the prompt ids
// with each <|image_pad|> expanded per the fixture's preprocessor_config.json, the items,
// and the media digest of their pixel payload (what the simulated prefill mixes into the KV).
func mmExpect(t *testing.T, q string, raws ...[]byte) ([]uint32, []media.Item, uint64) {
	t.Helper()
	m, dir := qwenVL(t)
	urls := make([]string, len(raws))
	for i, r := range raws {
		urls[i] = dataURL(r)
	}
	msgs, _ := json.Marshal(mmMessages(q, urls...))
	_, ids, err := m.ChatPrompt(text.ChatInput{Messages: msgs, AddGenerationPrompt: true})
	require.NoError(t, err)
	b, err := os.ReadFile(filepath.Join(dir, "preprocessor_config.json"))
	require.NoError(t, err)
	c, err := media.ParsePreprocessorConfig(b)
	require.NoError(t, err)
	p := media.NewProcessor(c)
	items := make([]media.Item, len(raws))
	var pix []byte
	for i, r := range raws {
		items[i], err = p.ProcessImage(r)
		require.NoError(t, err)
		pix = append(pix, items[i].PixelBytes()...)
	}
	pad, ok := m.Tokenizer.TokenID("<|image_pad|>")
	require.True(t, ok)
	out, _, err := media.ExpandPlaceholders(ids, pad, items)
	require.NoError(t, err)
	return out, items, grpcsim.PixelDigest(pix)
}

// chatContent is the assistant text of a non-streaming chat response's choice i.
func chatContent(t *testing.T, r *fleet.Response, i int) string {
	t.Helper()
	ch := r.Object(t)["choices"].([]any)
	require.Greater(t, len(ch), i, string(r.Body))
	return ch[i].(map[string]any)["message"].(map[string]any)["content"].(string)
}

func chatInput(msgs []byte) text.ChatInput {
	return text.ChatInput{Messages: msgs, AddGenerationPrompt: true}
}
