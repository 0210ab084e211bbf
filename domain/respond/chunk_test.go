package respond

import "testing"

// chunkTexts are texts of every byte value and of the escapes json.Marshal writes.
func chunkTexts() []string {
	out := []string{"plain", "a<b>&c", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029 x", "bad\xff\xfe", "\xe2\x82", "é中😀", "\"\\/"}
	for c := range 256 {
		out = append(out, "x"+string([]byte{byte(c)})+"y")
	}
	return out
}

// TestTextChunksMatchTheMarshalledOnes holds the text-only fast paths of CompletionStream
// and ChatStream to the bytes the reflective chunk writes for the same event, over ids and
// model names that need escaping and texts of every byte.
func TestTextChunksMatchTheMarshalledOnes(t *testing.T) {
	metas := []Meta{{ID: "cmpl-1", Model: "m", Created: 1796620327}, {ID: "id<&>\"x\"", Model: "org/m\u2028\xff", Created: 0}, {Created: -5}}
	for _, m := range metas {
		for _, text := range chunkTexts() {
			if text == "" {
				continue
			}
			for _, idx := range []int{0, 3} {
				cs := NewCompletionStream(m, nil)
				want := cs.chunk([]completionChoice{{Index: idx, Text: text}}, nil)
				if got := cs.Delta(idx, text, nil); string(got) != string(want) {
					t.Fatalf("completion %+v %q: got %s want %s", m, text, got, want)
				}
				ch := NewChatStream(m, nil)
				ch.started[idx] = true
				want = ch.chunk([]chatChunkChoice{{Index: idx, Delta: chatDelta{Content: strPtr(text)}}}, nil)
				if got := ch.Delta(idx, Delta{Content: text}, nil); string(got) != string(want) {
					t.Fatalf("chat %+v %q: got %s want %s", m, text, got, want)
				}
			}
		}
	}
	// A first delta still opens with the role chunk; a delta with logprobs but no vocabulary
	// and no content stays on the general path (an empty delta object).
	ch := NewChatStream(metas[0], nil)
	first := ch.Delta(0, Delta{Content: "hi"}, nil)
	want := string(ch.chunk([]chatChunkChoice{{Index: 0, Delta: chatDelta{Role: "assistant", Content: strPtr("")}}}, nil)) +
		string(ch.chunk([]chatChunkChoice{{Index: 0, Delta: chatDelta{Content: strPtr("hi")}}}, nil))
	if string(first) != want {
		t.Fatalf("first delta: got %s want %s", first, want)
	}
	got := ch.Delta(0, Delta{}, []Logprob{{TokenID: 1}})
	if want := ch.chunk([]chatChunkChoice{{Index: 0, Delta: chatDelta{}}}, nil); string(got) != string(want) {
		t.Fatalf("logprobs without a vocabulary: got %s want %s", got, want)
	}
}
