package kvroute_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/domain/worker"
)

// unimplemented is an engine without SubscribeKvEvents.
type unimplemented struct{}

func (unimplemented) SubscribeKvEvents(context.Context, *commonpb.SubscribeKvEventsRequest, ...grpc.CallOption) (grpc.ServerStreamingClient[commonpb.KvEventBatch], error) {
	return nil, status.Error(codes.Unimplemented, "no events")
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func grpcWorker(url string) *worker.Live {
	return worker.NewLive(worker.Worker{ID: url, URL: url, Mode: worker.ConnGRPC, Role: worker.RolePrefill,
		Runtime: worker.RuntimeVLLM, Models: []string{"m"}}, worker.StatusReady)
}

func router(t *testing.T, c *clock) (*kvroute.Router, *memory.Workers) {
	t.Helper()
	r, err := kvroute.New(kvroute.Options{Dial: func(worker.Worker) (kvevents.KvEventsClient, error) { return unimplemented{}, nil },
		SpeculativeTTL: 2 * time.Second, Now: c.now})
	require.NoError(t, err)
	store := memory.NewWorkers()
	r.Watch(store)
	r.Start()
	t.Cleanup(r.Stop)
	return r, store
}

func block(from int) []uint32 {
	out := make([]uint32, 16)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func TestSpeculativeEntriesMatchUntilTheyExpire(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := router(t, c)
	w := grpcWorker("grpc://127.0.0.1:1")
	require.NoError(t, store.Add(w))
	prompt := append(block(1), block(100)...)
	r.Speculate(w.URL, "m", prompt)
	assert.Equal(t, map[string]int{w.URL: 32}, r.Matched("m", prompt))
	c.add(2 * time.Second)
	assert.Empty(t, r.Matched("m", prompt), "expired after the TTL")
}

func TestRemovedWorkerLosesItsEntries(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := router(t, c)
	w := grpcWorker("grpc://127.0.0.1:2")
	require.NoError(t, store.Add(w))
	r.Index().ApplyBatch(w.URL, "m", kvevent.Batch{Events: []kvevent.Event{{Kind: kvevent.Stored, BlockSize: 16,
		Blocks: []kvevent.Block{{EngineHash: 7, Tokens: block(1)}}}}})
	r.Speculate(w.URL, "m", block(1))
	require.Equal(t, 16, r.Matched("m", block(1))[w.URL])
	_, err := store.Remove(w.ID)
	require.NoError(t, err)
	assert.Empty(t, r.Matched("m", block(1)))
	assert.Zero(t, r.Index().Stats().Entries)
}

func TestUnimplementedLeavesTheWorkerNotLive(t *testing.T) {
	t.Parallel()
	r, store := router(t, &clock{t: time.Unix(1000, 0)})
	w := grpcWorker("grpc://127.0.0.1:3")
	require.NoError(t, store.Add(w))
	require.Eventually(t, func() bool { h, ok := r.Health(w.URL); return ok && h.Disabled }, 5*time.Second, 5*time.Millisecond)
	assert.False(t, r.Live(w.URL))
	// An engine without the stream does not make every request tokenize before selection.
	require.Eventually(t, func() bool { return !r.Active() }, 5*time.Second, 5*time.Millisecond)
}

func TestHTTPWorkersAreNotSubscribed(t *testing.T) {
	t.Parallel()
	r, store := router(t, &clock{t: time.Unix(1000, 0)})
	w := worker.NewLive(worker.Worker{ID: "h", URL: "http://127.0.0.1:4", Mode: worker.ConnHTTP, Role: worker.RolePrefill}, worker.StatusReady)
	require.NoError(t, store.Add(w))
	_, ok := r.Health(w.URL)
	assert.False(t, ok)
	assert.False(t, r.Active(), "no subscription: the dispatcher does not tokenize early")
}
