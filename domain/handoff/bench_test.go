package handoff_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/smg-go/smg/domain/handoff"
)

func chatRequestBody(size int) []byte {
	var b strings.Builder
	b.WriteString(`{"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"system","content":"You are helpful."}`)
	for i := 0; b.Len() < size-200; i++ {
		fmt.Fprintf(&b, `,{"role":"user","content":"Turn %d: tell me about prefill and decode disaggregation, with \"quotes\".\n"}`, i)
	}
	b.WriteString(`],"max_tokens":256,"temperature":0.7,"stream":true,"stream_options":{"include_usage":true}}`)
	return []byte(b.String())
}

// BenchmarkBootstrapPatch measures Inspect + BootstrapPatch for the SGLang parallel path.
func BenchmarkBootstrapPatch(b *testing.B) {
	port, rank0, rank1 := 8998, 0, 1
	for _, size := range []int{4 << 10, 64 << 10} {
		body := chatRequestBody(size)
		for _, tc := range []struct {
			name  string
			batch int
			tg    handoff.Target
		}{
			{"scalar", 0, handoff.Target{Host: "10.0.0.1", Port: &port}},
			{"batch8", 8, handoff.Target{Host: "10.0.0.1", Port: &port}},
			{"dp", 0, handoff.Target{Host: "10.0.0.1", Port: &port, PrefillDPRank: &rank0, DecodeDPRank: &rank1}},
		} {
			b.Run(fmt.Sprintf("%dKB/%s", size>>10, tc.name), func(b *testing.B) {
				b.SetBytes(int64(len(body)))
				b.ReportAllocs()
				for b.Loop() {
					req, err := handoff.Inspect(handoff.RouteChat, body)
					if err != nil {
						b.Fatal(err)
					}
					legs := handoff.BootstrapPatch(req.Body, tc.batch, tc.tg, nil)
					if len(legs.Decode) == 0 {
						b.Fatal("empty")
					}
				}
			})
		}
	}
}

// BenchmarkMintRoom measures room minting, single-threaded and contended.
func BenchmarkMintRoom(b *testing.B) {
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		var sink uint64
		for b.Loop() {
			sink ^= handoff.MintRoom()
		}
		_ = sink
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			var sink uint64
			for pb.Next() {
				sink ^= handoff.MintRoom()
			}
			_ = sink
		})
	})
}

// BenchmarkPlanSequential measures the vLLM path: Inspect, prefill body, decode body.
func BenchmarkPlanSequential(b *testing.B) {
	body := chatRequestBody(4 << 10)
	resp := []byte(`{"id":"x","choices":[{"index":0,"text":"a"}],"kv_transfer_params":{"do_remote_prefill":true,"remote_engine_id":"e","remote_block_ids":[[1,2,3,4,5,6,7,8]],"remote_host":"10.0.0.2","remote_port":5600,"tp_size":1}}`)
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		req, err := handoff.Inspect(handoff.RouteChat, body)
		if err != nil {
			b.Fatal(err)
		}
		plan, err := handoff.PlanSequential(handoff.Nixl{}, req)
		if err != nil {
			b.Fatal(err)
		}
		if d, o := plan.Decode(resp); len(d) == 0 || o != handoff.OutcomeRelayed {
			b.Fatal("bad decode")
		}
	}
}

// BenchmarkDoneScanner measures [DONE] scanning over a chat stream in 1 KB chunks.
func BenchmarkDoneScanner(b *testing.B) {
	var sb strings.Builder
	for i := range 200 {
		fmt.Fprintf(&sb, "data: {\"id\":\"c\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"tok%d\"}}]}\n\n", i)
	}
	sb.WriteString("data: [DONE]\n\n")
	stream := []byte(sb.String())
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		var s handoff.DoneScanner
		done := false
		for i := 0; i < len(stream) && !done; i += 1024 {
			_, done = s.Feed(stream[i:min(i+1024, len(stream))])
		}
		if !done {
			b.Fatal("missed [DONE]")
		}
	}
}
