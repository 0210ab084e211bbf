package kvroute_test

import (
	"bytes"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/test/sim/kvcache"
	simkv "github.com/smg-go/smg/test/sim/kvevents"
)

const topic = "kv-events"

// syncBuf is a log destination tests read.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// publisher starts a simulated vLLM event publisher (PUB + optional replay ROUTER).
func publisher(t *testing.T, replay bool) *simkv.Publisher {
	t.Helper()
	conf := `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:0","topic":"` + topic + `"`
	if replay {
		conf += `,"replay_endpoint":"tcp://*:0"`
	}
	cfg, err := simkv.ParseConfig(simkv.EngineVLLM, conf+"}")
	require.NoError(t, err)
	pub, err := simkv.NewPublisher(simkv.Options{Config: cfg, BindHost: "127.0.0.1"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = pub.Close() })
	return pub
}

// httpWorker is an HTTP prefill whose registration names pub's endpoints.
func httpWorker(url string, pub *simkv.Publisher) *worker.Live {
	labels := map[string]string{wire.LabelKVEventsEndpoint: pub.Endpoint(), wire.LabelKVEventsTopic: topic}
	if pub.ReplayEndpoint() != "" {
		labels[wire.LabelKVEventsReplayEndpoint] = pub.ReplayEndpoint()
	}
	return worker.NewLive(worker.Worker{ID: url, URL: url, Mode: worker.ConnHTTP, Role: worker.RolePrefill,
		Runtime: worker.RuntimeVLLM, Models: []string{"m"}, Labels: labels}, worker.StatusReady)
}

func zmqRouter(t *testing.T, c *clock, log io.Writer) (*kvroute.Router, *memory.Workers) {
	t.Helper()
	if log == nil {
		log = io.Discard
	}
	r, err := kvroute.New(kvroute.Options{Dial: func(worker.Worker) (kvevents.KvEventsClient, error) { return unimplemented{}, nil },
		SpeculativeTTL: 2 * time.Second, Now: c.now, StallAfter: time.Second,
		Subscriber: kvevents.Options{Logger: slog.New(slog.NewTextHandler(log, nil)), BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond}})
	require.NoError(t, err)
	store := memory.NewWorkers()
	r.Watch(store)
	r.Start()
	t.Cleanup(r.Stop)
	return r, store
}

func stored(hash uint64, tokens []uint32, parent uint64) kvcache.Event {
	return kvcache.Event{Stored: &kvcache.BlockStored{BlockHashes: []uint64{hash}, TokenIDs: tokens, BlockSize: 16,
		ParentBlockHash: parent, HasParent: parent != 0}}
}

// subscribed waits until pub sees the worker's SUB socket.
func subscribed(t *testing.T, r *kvroute.Router, url string, pub *simkv.Publisher) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Contains(pub.SubscribedTopics(), topic) && r.Live(url) },
		10*time.Second, 5*time.Millisecond)
}

func TestHTTPWorkerWithAnEventsEndpointIsSubscribedOverZMQ(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := zmqRouter(t, c, nil)
	pub := publisher(t, true)
	w := httpWorker("http://127.0.0.1:11", pub)
	require.NoError(t, store.Add(w))
	subscribed(t, r, w.URL, pub)
	assert.True(t, r.Active(), "an HTTP subscription makes the dispatcher tokenize before selection")

	pub.Publish([]kvcache.Event{stored(1, block(1), 0), stored(2, block(100), 1)})
	prompt := append(block(1), block(100)...)
	require.Eventually(t, func() bool { return r.Matched("m", prompt)[w.URL] == 32 }, 10*time.Second, 5*time.Millisecond)

	// Evicting under memory pressure: the engine's BlockRemoved takes the blocks out at once.
	pub.Publish([]kvcache.Event{{Removed: &kvcache.BlockRemoved{BlockHashes: []uint64{2}}}})
	require.Eventually(t, func() bool { return r.Matched("m", prompt)[w.URL] == 16 }, 10*time.Second, 5*time.Millisecond)
	h, ok := r.Health(w.URL)
	require.True(t, ok)
	assert.Equal(t, "zmq", h.Transport)
	assert.Equal(t, pub.Endpoint(), h.Endpoint)
	st := r.Stats()
	require.Len(t, st, 1)
	assert.True(t, st[0].Subscribed && st[0].Connected && st[0].HasSeq, "stream health for the metrics: %+v", st[0])
	assert.Equal(t, uint64(1), st[0].LastSeq)
}

func TestDPRankWorkerSubscribesToPortPlusRank(t *testing.T) {
	t.Parallel()
	r, store := zmqRouter(t, &clock{t: time.Unix(1000, 0)}, nil)
	rank, size := 2, 4
	w := worker.NewLive(worker.Worker{ID: "r2", URL: "http://127.0.0.1:12@2", Mode: worker.ConnHTTP, Role: worker.RolePrefill,
		DPRank: &rank, DPSize: &size, Labels: map[string]string{wire.LabelKVEventsEndpoint: "tcp://*:5557"}}, worker.StatusReady)
	require.NoError(t, store.Add(w))
	h, ok := r.Health(w.URL)
	require.True(t, ok, "a DP rank of an HTTP worker is subscribed")
	assert.Equal(t, "tcp://127.0.0.1:5559", h.Endpoint, "rank 2 publishes on port + 2, on the worker's host")
}

func TestRestartedEngineLosesItsEntries(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := zmqRouter(t, c, nil)
	pub := publisher(t, false)
	w := httpWorker("http://127.0.0.1:13", pub)
	require.NoError(t, store.Add(w))
	subscribed(t, r, w.URL, pub)
	for i := range 3 {
		pub.Publish([]kvcache.Event{stored(uint64(10+i), block(1000*(i+1)), 0)})
	}
	require.Eventually(t, func() bool { return r.Matched("m", block(3000))[w.URL] == 16 }, 10*time.Second, 5*time.Millisecond)

	// The engine restarts on the same port: its sequence starts again at 0.
	ep := pub.Endpoint()
	require.NoError(t, pub.Close())
	port := ep[strings.LastIndex(ep, ":")+1:]
	cfg, err := simkv.ParseConfig(simkv.EngineVLLM, `{"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:`+port+`","topic":"`+topic+`"}`)
	require.NoError(t, err)
	var pub2 *simkv.Publisher
	require.Eventually(t, func() bool {
		pub2, err = simkv.NewPublisher(simkv.Options{Config: cfg, BindHost: "127.0.0.1"})
		return err == nil
	}, 10*time.Second, 20*time.Millisecond, "rebinding %s", port)
	t.Cleanup(func() { _ = pub2.Close() })
	require.Eventually(t, func() bool { return slices.Contains(pub2.SubscribedTopics(), topic) }, 10*time.Second, 5*time.Millisecond)
	pub2.Publish([]kvcache.Event{stored(99, block(9000), 0)})
	require.Eventually(t, func() bool { return r.Matched("m", block(9000))[w.URL] == 16 }, 10*time.Second, 5*time.Millisecond)
	assert.Zero(t, r.Matched("m", block(3000))[w.URL], "the old engine's blocks are gone once the sequence restarts")
	h, _ := r.Health(w.URL)
	assert.Equal(t, uint64(1), h.Resets)
}

func TestStalledStreamFallsBackToApproximateAndRecovers(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	var log syncBuf
	r, store := zmqRouter(t, c, &log)
	pub := publisher(t, true)
	w := httpWorker("http://127.0.0.1:14", pub)
	require.NoError(t, store.Add(w))
	subscribed(t, r, w.URL, pub)

	require.NoError(t, pub.SetFault(simkv.FaultStall))
	r.Speculate(w.URL, "m", block(1)) // a request routed there: a batch is now expected
	pub.Publish([]kvcache.Event{stored(1, block(1), 0)})
	c.add(500 * time.Millisecond)
	assert.True(t, r.Live(w.URL), "silent for less than StallAfter")
	c.add(time.Second)
	assert.False(t, r.Live(w.URL), "silent past StallAfter with a request routed: approximate routing")
	assert.Contains(t, log.String(), "stream stalled")

	pub.ClearFaults()
	pub.Publish([]kvcache.Event{stored(2, block(200), 0)})
	require.Eventually(t, func() bool { return r.Live(w.URL) }, 10*time.Second, 5*time.Millisecond)
	// The index itself, not Matched: the speculative entry made above would answer too.
	assert.Equal(t, 16, r.Index().Match("m", block(1))[w.URL].Tokens(), "the stalled batch came back through replay")
	assert.Equal(t, uint64(1), specOf(t, r, w.URL).Confirmed, "and it confirmed the speculative entry")
}

func TestGarbageAndUnrecoverableGapsDoNotPanic(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	var log syncBuf
	r, store := zmqRouter(t, c, &log)
	pub := publisher(t, false) // no replay: a gap drops the worker's entries
	w := httpWorker("http://127.0.0.1:15", pub)
	require.NoError(t, store.Add(w))
	subscribed(t, r, w.URL, pub)

	pub.Publish([]kvcache.Event{stored(1, block(1), 0)})
	require.Eventually(t, func() bool { return r.Matched("m", block(1))[w.URL] == 16 }, 10*time.Second, 5*time.Millisecond)

	require.NoError(t, pub.SetFault(simkv.FaultGarbage))
	pub.Publish([]kvcache.Event{stored(2, block(200), 0)}) // undecodable
	require.Eventually(t, func() bool { h, _ := r.Health(w.URL); return h.DecodeErrors == 1 }, 10*time.Second, 5*time.Millisecond)
	assert.Contains(t, log.String(), "undecodable message dropped")

	require.NoError(t, pub.SetFault(simkv.FaultGap))
	pub.Publish([]kvcache.Event{stored(3, block(300), 0)}) // withheld
	pub.Publish([]kvcache.Event{stored(4, block(400), 0)})
	require.Eventually(t, func() bool { return r.Matched("m", block(400))[w.URL] == 16 }, 10*time.Second, 5*time.Millisecond)
	assert.Zero(t, r.Matched("m", block(1))[w.URL], "an unrecoverable gap drops what the stream said before it")
	assert.Contains(t, log.String(), "dropping the worker's entries")
	h, _ := r.Health(w.URL)
	assert.Equal(t, uint64(1), h.Gaps)
	assert.True(t, r.Live(w.URL))
}

func TestKVStreamSaysWhyAWorkerRoutesApproximately(t *testing.T) {
	t.Parallel()
	c := &clock{t: time.Unix(1000, 0)}
	r, store := zmqRouter(t, c, nil)
	pub := publisher(t, true)
	w := httpWorker("http://127.0.0.1:16", pub)
	bare := worker.NewLive(worker.Worker{ID: "b", URL: "http://127.0.0.1:17", Mode: worker.ConnHTTP, Role: worker.RolePrefill}, worker.StatusReady)
	require.NoError(t, store.Add(w))
	require.NoError(t, store.Add(bare))
	subscribed(t, r, w.URL, pub)
	pub.Publish([]kvcache.Event{stored(1, block(1), 0)})
	require.Eventually(t, func() bool { return r.KVStream(w.URL, w.Models).HasSeq }, 10*time.Second, 5*time.Millisecond)

	st := r.KVStream(w.URL, w.Models)
	assert.Equal(t, "live", st.State)
	assert.Equal(t, "events", st.Routing)
	assert.Equal(t, "zmq", st.Transport)
	assert.Zero(t, st.LastSeq)

	st = r.KVStream(bare.URL, nil)
	assert.Equal(t, "none", st.State)
	assert.Equal(t, "approximate", st.Routing)
	assert.Contains(t, st.Reason, "kv_events_endpoint")

	r.Speculate(w.URL, "m", block(5))
	c.add(2 * time.Second)
	st = r.KVStream(w.URL, w.Models)
	assert.Equal(t, "stalled", st.State)
	assert.Equal(t, "approximate", st.Routing)
}
