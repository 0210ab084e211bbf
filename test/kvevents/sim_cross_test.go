// Package kvevents_test checks the gateway's KV-event subscriber (adapters/kvevents,
// written from the engines' wire facts) against the simulator's publishers
// (test/sim/kvevents, test/sim/grpcsim): every payload encoding over ZMQ and the gRPC
// SubscribeKvEvents stream decode into the prefix index, and a sequence gap is recovered
// through replay.
package kvevents_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/kvindex"
	"github.com/smg-go/smg/test/sim/grpcsim"
	"github.com/smg-go/smg/test/sim/kvcache"
	simkv "github.com/smg-go/smg/test/sim/kvevents"
)

const (
	blockSize = 4
	topic     = "kv-events"
	bigHash   = 0xF0E1D2C3B4A59687 // above 2^63
)

func tokens(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

// The events a short session of one engine publishes: a prompt's first two blocks, then
// (withheld live by a gap fault) its third block chained after them, then another prompt.
var (
	promptA  = tokens(0, 3*blockSize)
	storeA   = kvcache.Event{Stored: &kvcache.BlockStored{BlockHashes: []uint64{11, bigHash}, TokenIDs: promptA[:2*blockSize], BlockSize: blockSize}}
	extendA  = kvcache.Event{Stored: &kvcache.BlockStored{BlockHashes: []uint64{13}, ParentBlockHash: bigHash, HasParent: true, TokenIDs: promptA[2*blockSize:], BlockSize: blockSize}}
	promptB  = tokens(500, blockSize)
	storeB   = kvcache.Event{Stored: &kvcache.BlockStored{BlockHashes: []uint64{21}, TokenIDs: promptB, BlockSize: blockSize}}
	quietLog = slog.New(slog.NewTextHandler(io.Discard, nil))
)

func opts() kvevents.Options {
	return kvevents.Options{Logger: quietLog, BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond}
}

type subscriber interface {
	Run(context.Context) error
	Health() kvevents.Health
}

func run(t *testing.T, s subscriber) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
}

func waitSeq(t *testing.T, s subscriber, seq uint64) {
	t.Helper()
	require.Eventually(t, func() bool { h := s.Health(); return h.HasSeq && h.LastSeq >= seq }, 10*time.Second, 5*time.Millisecond,
		"waiting for sequence %d", seq)
}

// checkRecovered asserts the index holds everything published, the withheld batch
// included, and that the subscriber got it through one replay without a reset.
func checkRecovered(t *testing.T, idx *kvindex.Index, s subscriber) {
	t.Helper()
	assert.Equal(t, 3, idx.Match("m", promptA)["w"].Blocks, "the withheld extension came through replay")
	assert.Equal(t, 1, idx.Match("m", promptB)["w"].Blocks)
	h := s.Health()
	assert.Equal(t, uint64(1), h.Gaps)
	assert.Equal(t, uint64(1), h.Replays)
	assert.Zero(t, h.Resets)
	assert.Zero(t, h.DecodeErrors)
}

func TestSimulatorEventsDecodeAndGapsReplay(t *testing.T) {
	for _, enc := range []simkv.Encoding{simkv.EncodingVLLM, simkv.EncodingVLLMArray, simkv.EncodingSGLang, simkv.EncodingSGLangArray} {
		t.Run("zmq/"+string(enc), func(t *testing.T) {
			engine := simkv.EngineVLLM
			if enc == simkv.EncodingSGLang || enc == simkv.EncodingSGLangArray {
				engine = simkv.EngineSGLang
			}
			cfg, err := simkv.ParseConfig(engine, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:0","replay_endpoint":"tcp://*:0","topic":"`+topic+`"}`)
			require.NoError(t, err)
			pub, err := simkv.NewPublisher(simkv.Options{Config: cfg, Encoding: enc, BindHost: "127.0.0.1"})
			require.NoError(t, err)
			t.Cleanup(func() { _ = pub.Close() })

			idx := kvindex.New(kvindex.Options{})
			z, err := kvevents.NewZMQ(kvevents.ZMQConfig{Endpoint: pub.Endpoint(), ReplayEndpoint: pub.ReplayEndpoint(), Topic: topic,
				Sink: kvindex.WorkerSink{Index: idx, Worker: "w", Model: "m"}, Options: opts()})
			require.NoError(t, err)
			run(t, z)
			require.Eventually(t, func() bool { return slices.Contains(pub.SubscribedTopics(), topic) }, 10*time.Second, 5*time.Millisecond)

			pub.Publish([]kvcache.Event{storeA}) // seq 0
			waitSeq(t, z, 0)
			require.NoError(t, pub.SetFault(simkv.FaultGap))
			pub.Publish([]kvcache.Event{extendA}) // seq 1, withheld live
			pub.Publish([]kvcache.Event{storeB})  // seq 2
			waitSeq(t, z, 2)
			checkRecovered(t, idx, z)
		})
	}

	t.Run("grpc", func(t *testing.T) {
		s, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineVLLM, Role: grpcsim.RoleDecode,
			KVEventsConfig: `{"enable_kv_cache_events":true,"endpoint":"tcp://*:0","replay_endpoint":"tcp://*:0"}`})
		require.NoError(t, err)
		t.Cleanup(func() { _ = s.Close() })
		cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cc.Close() })

		idx := kvindex.New(kvindex.Options{})
		g, err := kvevents.NewGRPC(kvevents.GRPCConfig{Client: vllmpb.NewVllmEngineClient(cc), Name: s.Addr(),
			Sink: kvindex.WorkerSink{Index: idx, Worker: "w", Model: "m"}, Options: opts()})
		require.NoError(t, err)
		run(t, g)
		sink := s.KVEventSink(0)
		// A stream from "now" sees nothing published before it is registered: publish
		// warm-up blocks until one arrives.
		warm := 0
		require.Eventually(t, func() bool {
			warm++
			sink.Publish([]kvcache.Event{{Stored: &kvcache.BlockStored{BlockHashes: []uint64{uint64(1000 + warm)},
				TokenIDs: tokens(10_000+warm*blockSize, blockSize), BlockSize: blockSize}}})
			return g.Health().HasSeq
		}, 10*time.Second, 20*time.Millisecond)
		last := uint64(warm - 1)

		sink.Publish([]kvcache.Event{storeA})
		waitSeq(t, g, last+1)
		require.NoError(t, s.KVEvents().SetFault(simkv.FaultGap))
		sink.Publish([]kvcache.Event{extendA}) // withheld live
		sink.Publish([]kvcache.Event{storeB})
		waitSeq(t, g, last+3)
		checkRecovered(t, idx, g)
	})
}
