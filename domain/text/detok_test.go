package text_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
)

func TestDecodeStreamNeverEmitsPartialCharacters(t *testing.T) {
	t.Parallel()
	texts := corpus(t)
	heavy := texts["cjk_fullwidth"] + texts["emoji_zwj"] + texts["accents"] + "🧑🏿‍🚀𝔘𝔫𝔦𝔠𝔬𝔡𝔢 ﷽ " + texts["prompt_4k"][:200]
	for _, model := range []string{texttest.Qwen3, texttest.Llama3_1, texttest.Llama2} {
		tok := texttest.Tokenizer(t, model)
		ids := tok.Encode(heavy, false)
		ds := text.NewDecodeStream(tok, false)
		var sb strings.Builder
		held := 0
		for _, id := range ids {
			chunk := ds.Step(id)
			require.True(t, utf8.ValidString(chunk), model)
			require.NotContains(t, chunk, "\uFFFD", model)
			if chunk == "" {
				held++
			}
			sb.WriteString(chunk)
		}
		sb.WriteString(ds.Flush())
		streamed := sb.String()
		if model == texttest.Llama2 {
			// SentencePiece: the stream keeps the first token's "▁" as a space (text after a
			// prompt); a whole decode strips it.
			require.True(t, strings.HasPrefix(streamed, " "), model)
			streamed = streamed[1:]
		}
		assert.Equal(t, tok.Decode(ids, false), streamed, model)
		assert.Equal(t, heavy, streamed, model)
		assert.Positive(t, held, "%s: some token ended inside a character (the text is multi-byte heavy)", model)
	}
}

func TestDecodeStreamSkipsSpecialTokensAndFlushesBrokenTail(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	ids := tok.Encode("<|im_start|>assistant\n你好<|im_end|>", false)
	ds := text.NewDecodeStream(tok, true)
	var sb strings.Builder
	for _, id := range ids {
		sb.WriteString(ds.Step(id))
	}
	assert.Equal(t, "assistant\n你好", sb.String()+ds.Flush())

	// A token that ends inside a character is held; at the end it decodes to one U+FFFD.
	ids = tok.Encode("𝔘𝔫𝔦𝔠𝔬𝔡𝔢🧑🏿‍🚀", false)
	cut := -1
	for k := 1; k <= len(ids); k++ {
		if strings.HasSuffix(tok.Decode(ids[:k], false), "\uFFFD") {
			cut = k
			break
		}
	}
	require.Positive(t, cut, "some prefix ends inside a character")
	ds = text.NewDecodeStream(tok, false)
	sb.Reset()
	for _, id := range ids[:cut] {
		sb.WriteString(ds.Step(id))
	}
	assert.NotContains(t, sb.String(), "\uFFFD")
	assert.Equal(t, tok.Decode(ids[:cut], false), sb.String()+ds.Flush(), "flush gives the same U+FFFD as a full decode")
}

func TestStopSequencesSplitAcrossTokensAreTrimmedExactly(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	cases := []struct {
		name    string
		text    string
		opts    text.DecoderOptions
		want    string
		stopped bool
		matched string
	}{
		{"hidden stop over several tokens", "The answer is 42.</answer> and more", text.DecoderOptions{Stop: []string{"</answer>"}}, "The answer is 42.", true, "</answer>"},
		{"visible stop kept", "The answer is 42.</answer> and more", text.DecoderOptions{VisibleStop: []string{"</answer>"}}, "The answer is 42.</answer>", true, "</answer>"},
		{"stop inside a multi-byte run", "你好，世界！再见", text.DecoderOptions{Stop: []string{"世界"}}, "你好，", true, "世界"},
		{"stop starting mid-token", "Observation: done", text.DecoderOptions{Stop: []string{"vation"}}, "Obser", true, "vation"},
		{"diverging prefix is released", "STAR STARS STOP", text.DecoderOptions{Stop: []string{"STOP!"}}, "STAR STARS STOP", false, ""},
		{"first completed stop wins", "x abcd y", text.DecoderOptions{Stop: []string{"abcd", "bc"}}, "x a", true, "bc"},
		{"special tokens skipped before matching", "hi<|im_end|>there", text.DecoderOptions{SkipSpecialTokens: true, Stop: []string{"hithere"}}, "", true, "hithere"},
	}
	for _, c := range cases {
		ids := tok.Encode(c.text, false)
		d := text.NewDecoder(tok, c.opts)
		var sb strings.Builder
		stopped := false
		for _, id := range ids {
			out, s := d.Step(id)
			sb.WriteString(out)
			stopped = s
			if s {
				break
			}
		}
		sb.WriteString(d.Flush())
		assert.Equal(t, c.want, sb.String(), c.name)
		assert.Equal(t, c.stopped, stopped, c.name)
		stop, _, isID, ok := d.Matched()
		assert.Equal(t, c.stopped, ok, c.name)
		assert.False(t, isID, c.name)
		assert.Equal(t, c.matched, stop, c.name)
	}
}

func TestStopTokenIDEndsOutputWithoutItsText(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	nl, ok := tok.TokenID("\n\n")
	require.True(t, ok)
	ids := tok.Encode("line\n\nnext", false)
	require.Contains(t, ids, nl)
	d := text.NewDecoder(tok, text.DecoderOptions{StopTokenIDs: []uint32{nl}})
	var sb strings.Builder
	for _, id := range ids {
		out, stopped := d.Step(id)
		sb.WriteString(out)
		if stopped {
			break
		}
	}
	assert.Equal(t, "line", sb.String())
	_, id, isID, ok := d.Matched()
	assert.True(t, ok && isID)
	assert.Equal(t, nl, id)
}

// The jail's output must not depend on how the text is chunked: compare random chunkings with
// a character-by-character reference (first stop to complete wins, the longer on a tie).
func TestStopJailIsChunkingInvariant(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 9))
	alphabet := []string{"a", "b", "c", "é", "世", " "}
	stopsSets := [][]string{{"ab"}, {"abc", "bc"}, {"ca", "aab"}, {"é世"}, {"b b", "a"}}
	for iter := 0; iter < 2000; iter++ {
		var sb strings.Builder
		for n := rng.IntN(14); n >= 0; n-- {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		s := sb.String()
		stops := stopsSets[rng.IntN(len(stopsSets))]
		want, wantStopped := referenceStop(s, stops)
		j := text.NewStopJail(stops, nil)
		var got strings.Builder
		stopped := false
		for rest := s; rest != "" && !stopped; {
			n := 1 + rng.IntN(len(rest))
			for !utf8.ValidString(rest[:n]) {
				n++
			}
			out, st := j.Push(rest[:n])
			got.WriteString(out)
			stopped = st
			rest = rest[n:]
		}
		if !stopped {
			got.WriteString(j.Flush())
		}
		require.Equal(t, want, got.String(), "text %q stops %q", s, stops)
		require.Equal(t, wantStopped, stopped, "text %q stops %q", s, stops)
	}
}

func referenceStop(s string, stops []string) (string, bool) {
	for end := 1; end <= len(s); end++ {
		best := ""
		for _, st := range stops {
			if strings.HasSuffix(s[:end], st) && len(st) > len(best) {
				best = st
			}
		}
		if best != "" {
			return s[:end-len(best)], true
		}
	}
	return s, false
}

func TestResolveStringStopsForSGLang(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	nl, _ := tok.TokenID("\n\n")
	r := text.ResolveStringStops(tok, []string{"\n\n", "</answer>", "", "\n\n"}, []uint32{151645, nl})
	assert.Equal(t, []uint32{151645, nl}, r.StopTokenIDs, "one-token stops join stop_token_ids once")
	assert.Equal(t, []string{"\n\n", "</answer>", "\n\n"}, r.GatewayStops, "every string stop is trimmed by the gateway")
	r = text.ResolveStringStops(tok, []string{"<|im_end|>"}, nil)
	assert.Equal(t, []uint32{151645}, r.StopTokenIDs)
}
