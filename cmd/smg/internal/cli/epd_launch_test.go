package cli_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"image"
	"image/color"
	"image/png"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// vlTemplate renders image parts as Qwen2-VL does: <|vision_start|><|image_pad|><|vision_end|>.
const vlTemplate = `{% for message in messages %}<|im_start|>{{ message['role'] }}
{% if message['content'] is string %}{{ message['content'] }}{% else %}{% for c in message['content'] %}{% if c['type'] == 'image_url' %}<|vision_start|><|image_pad|><|vision_end|>{% elif 'text' in c %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}`

// vlModelDir is a Qwen2-VL-style --model-path: Qwen3's tokenizer (it has the vision
// tokens) with vlTemplate as its chat template.
func vlModelDir(t *testing.T) string {
	t.Helper()
	src := texttest.Dir(t, texttest.Qwen3)
	dir := t.TempDir()
	tok, err := os.ReadFile(filepath.Join(src, "tokenizer.json"))
	require.NoError(t, err)
	var tc map[string]any
	b, err := os.ReadFile(filepath.Join(src, "tokenizer_config.json"))
	require.NoError(t, err)
	require.NoError(t, json.Unmarshal(b, &tc))
	tc["chat_template"] = vlTemplate
	b, err = json.Marshal(tc)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), b, 0o644))
	return dir
}

func pngURL(t *testing.T, seed uint8) string {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, 56, 56))
	for y := range 56 {
		for x := range 56 {
			img.SetNRGBA(x, y, color.NRGBA{R: uint8(x) + seed, G: uint8(y) * seed, B: seed, A: 255})
		}
	}
	var buf bytes.Buffer
	require.NoError(t, png.Encode(&buf, img))
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// The seed's `smg launch --epd-disaggregation --encode <url> <port> --prefill <url> <port>
// --decode <url> --model-path …` example, run through the command line against simulators:
// ready only with every leg, two images on two encode workers, a text-only request with no
// encode leg, then a clean exit.
func TestSeedEPDLaunchCommandLine(t *testing.T) {
	t.Parallel()
	dir := vlModelDir(t)
	const model = "qwen-vl-sim"
	mk := func(role string) *grpcsim.Server {
		s, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineTokenSpeed, Role: role, Model: model, TokenizerPath: dir})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	e0, e1, p, d := mk(grpcsim.RoleEncode), mk(grpcsim.RoleEncode), mk(grpcsim.RolePrefill), mk(grpcsim.RoleDecode)
	port := freePort(t)
	base := "http://127.0.0.1:" + strconv.Itoa(port)
	args := []string{"launch",
		"--epd-disaggregation",
		"--encode", e0.URL(), strconv.Itoa(e0.BootstrapPort()),
		"--encode", e1.URL(), strconv.Itoa(e1.BootstrapPort()),
		"--prefill", p.URL(), strconv.Itoa(p.BootstrapPort()),
		"--decode", d.URL(),
		"--model-path", dir,
		"--encode-policy", "round_robin",
		"--pd-pairing-mode", "strict", // ignored in EPD mode
		"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--prometheus-port", "0", "--log-level", "error",
		"--health-check-interval-secs", "0.25", "--health-success-threshold", "1", "--shutdown-drain-delay-secs", "0"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() { done <- cli.Run(ctx, args, envOf(nil), &out, &errOut) }()

	hc := &http.Client{Timeout: 60 * time.Second}
	require.Eventually(t, func() bool {
		r, err := hc.Get(base + "/readiness")
		if err != nil {
			return false
		}
		r.Body.Close()
		return r.StatusCode == http.StatusOK
	}, 20*time.Second, 50*time.Millisecond, "EPD gateway ready: %s", errOut.String())

	post := func(body map[string]any) (int, map[string]any) {
		b, _ := json.Marshal(body)
		r, err := hc.Post(base+"/v1/chat/completions", "application/json", bytes.NewReader(b))
		require.NoError(t, err)
		defer r.Body.Close()
		raw, _ := io.ReadAll(r.Body)
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m), string(raw))
		return r.StatusCode, m
	}
	status, body := post(map[string]any{"model": model, "max_tokens": 4, "messages": []any{map[string]any{"role": "user", "content": []any{
		map[string]any{"type": "image_url", "image_url": map[string]string{"url": pngURL(t, 3)}},
		map[string]any{"type": "image_url", "image_url": map[string]string{"url": pngURL(t, 9)}},
		map[string]any{"type": "text", "text": "Which differs?"}}}}})
	require.Equal(t, http.StatusOK, status, "%v", body)
	s0, s1, ps := e0.Stats().EPD, e1.Stats().EPD, p.Stats()
	assert.Len(t, s0.EncodedHashes, 1, "one image per encode worker")
	assert.Len(t, s1.EncodedHashes, 1)
	assert.NotEqual(t, s0.EncodedHashes, s1.EncodedHashes)
	assert.NotEqual(t, s0.EncodeRooms, s1.EncodeRooms)
	assert.Equal(t, append(s0.EncodedHashes, s1.EncodedHashes...), ps.EPD.EmbeddingHashes, "the prefill got both embeddings in item order")
	assert.Zero(t, ps.MM.PixelItems)
	assert.Zero(t, d.Stats().MM.PixelItems)

	status, body = post(map[string]any{"model": model, "max_tokens": 4, "messages": []any{map[string]any{"role": "user", "content": "Only text."}}})
	require.Equal(t, http.StatusOK, status, "%v", body)
	assert.EqualValues(t, 1, e0.Stats().Requests, "no Encode RPC for text only")
	assert.EqualValues(t, 1, e1.Stats().Requests)
	assert.EqualValues(t, 2, p.Stats().EPD.EncodeRefs)
	assert.EqualValues(t, 2, d.Stats().Requests)

	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("launch did not return after cancel")
	}
	assert.False(t, strings.Contains(errOut.String(), "panic"), errOut.String())
}
