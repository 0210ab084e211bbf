package text_test

import (
	"testing"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

// BenchmarkEncode4KB reports tokens/s for the 4096-byte corpus prompt (the target on the gRPC
// path is ≥ 1 M tokens/s: every prompt is tokenized before the prefill starts).
func BenchmarkEncode4KB(b *testing.B) {
	for _, model := range []string{texttest.Qwen3, texttest.Llama3_1, texttest.Llama2} {
		b.Run(model, func(b *testing.B) {
			tok := texttest.Tokenizer(b, model)
			prompt := corpus(b)["prompt_4k"]
			n := len(tok.Encode(prompt, false))
			b.SetBytes(int64(len(prompt)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				tok.Encode(prompt, false)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkDecodePerToken is the per-token cost of incremental detokenisation with a stop
// string being watched (the gRPC streaming path): ns/op is per token.
func BenchmarkDecodePerToken(b *testing.B) {
	tok := texttest.Tokenizer(b, texttest.Qwen3)
	c := corpus(b)
	ids := tok.Encode(c["prompt_4k"]+c["cjk_fullwidth"]+c["emoji_zwj"], false)
	b.ReportAllocs()
	b.ResetTimer()
	var d *text.Decoder
	for i := 0; i < b.N; i++ {
		if i%len(ids) == 0 {
			d = text.NewDecoder(tok, text.DecoderOptions{SkipSpecialTokens: true, Stop: []string{"</answer>"}})
		}
		d.Step(ids[i%len(ids)])
	}
}

// BenchmarkParseQwen3 is the one-off cost of loading Qwen3's 11 MB tokenizer.json.
func BenchmarkParseQwen3(b *testing.B) {
	data := mustRead(b, texttest.Dir(b, texttest.Qwen3)+"/tokenizer.json")
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := text.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
