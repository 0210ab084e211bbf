package kvevents_test

import (
	"testing"
	"time"

	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// BenchmarkPublish is the cost of one batch (one 4-block BlockStored of 16-token blocks)
// from Publish through encoding, the replay buffer and the PUB socket, no subscriber.
func BenchmarkPublish(b *testing.B) {
	for _, enc := range []kvevents.Encoding{kvevents.EncodingVLLM, kvevents.EncodingSGLangArray} {
		b.Run(string(enc), func(b *testing.B) {
			c := config(true)
			c.MaxQueueSize = 0
			p, err := kvevents.NewPublisher(kvevents.Options{Config: c, Encoding: enc, BindHost: "127.0.0.1"})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			ev := []kvcache.Event{{Stored: &kvcache.BlockStored{
				BlockHashes: []uint64{1, 2, 3, bigHash}, ParentBlockHash: 9, HasParent: true,
				TokenIDs: seqIDs(1000, 64), BlockSize: 16,
			}}}
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				p.Publish(ev)
			}
			deadline := time.Now().Add(time.Minute)
			for p.Counts().Published < uint64(b.N) && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		})
	}
}
