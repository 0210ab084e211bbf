package jsonbody_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/smg-go/smg/domain/jsonbody"
)

// chatBody builds a realistic chat request of about size bytes: a few top-level fields, a
// message list with escaped text, tools, and sampling options.
func chatBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[`)
	b.WriteString(`{"role":"system","content":"You are a helpful assistant. Answer \"briefly\"."}`)
	for i := 0; b.Len() < size-400; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":"Question %d: explain the KV cache handoff between prefill and decode workers, step by step.\nThanks!"}`, i)
		fmt.Fprintf(&b, `,{"role":"assistant","content":[{"type":"text","text":"Answer %d: the prefill computes the cache \u2014 then decode pulls it."}]}`, i)
	}
	b.WriteString(`],"temperature":0.7,"top_p":0.95,"max_tokens":256,"stream":true,`)
	b.WriteString(`"stream_options":{"include_usage":true},"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}}}],"user":"bench"}`)
	return []byte(b.String())
}

func benchSizes(b *testing.B, fn func(b *testing.B, body []byte)) {
	for _, size := range []int{4 << 10, 64 << 10} {
		body := chatBody(size)
		b.Run(fmt.Sprintf("%dKB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			fn(b, body)
		})
	}
}

// BenchmarkParse measures validating and indexing a chat body.
func BenchmarkParse(b *testing.B) {
	benchSizes(b, func(b *testing.B, body []byte) {
		for b.Loop() {
			if _, err := jsonbody.Parse(body); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkPatchBootstrap measures Parse + setting the three bootstrap fields + rendering.
func BenchmarkPatchBootstrap(b *testing.B) {
	benchSizes(b, func(b *testing.B, body []byte) {
		for b.Loop() {
			o, err := jsonbody.Parse(body)
			if err != nil {
				b.Fatal(err)
			}
			out := o.Edit().SetString("bootstrap_host", "10.0.0.1").SetInt("bootstrap_port", 8998).
				SetUint("bootstrap_room", 1234567890123456789).Bytes()
			if len(out) <= len(body) {
				b.Fatal("short output")
			}
		}
	})
}

// BenchmarkEncodingJSONRoundTrip is the baseline Patch avoids: decode into a map, set the
// fields, encode (which also loses key order).
func BenchmarkEncodingJSONRoundTrip(b *testing.B) {
	benchSizes(b, func(b *testing.B, body []byte) {
		for b.Loop() {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				b.Fatal(err)
			}
			m["bootstrap_host"], m["bootstrap_port"], m["bootstrap_room"] = "10.0.0.1", 8998, uint64(1234567890123456789)
			if _, err := json.Marshal(m); err != nil {
				b.Fatal(err)
			}
		}
	})
}
