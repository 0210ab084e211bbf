package kvevents_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zeromq/zmq4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/domain/kvevent"
)

const topic = "kv-events"

// recSink records what a subscriber delivers.
type recSink struct {
	mu     sync.Mutex
	seqs   []uint64
	resets []kvevent.ResetReason
	log    []string // "b<seq>" and "reset:<reason>" in arrival order
}

func (s *recSink) ApplyKVBatch(b kvevent.Batch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seqs = append(s.seqs, b.Seq)
	s.log = append(s.log, fmt.Sprintf("b%d", b.Seq))
}

func (s *recSink) ResetKV(r kvevent.ResetReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.resets = append(s.resets, r)
	s.log = append(s.log, "reset:"+string(r))
}

func (s *recSink) entries() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}

func (s *recSink) waitFor(t *testing.T, want ...string) {
	t.Helper()
	require.Eventually(t, func() bool { return slices.Equal(s.entries(), want) }, 10*time.Second, 5*time.Millisecond,
		"want %v", want)
}

// fakeEngine publishes like vLLM's ZmqEventPublisher (reference §1.3, §1.4): PUB frames
// [topic, seq, payload] and a ROUTER replaying its buffer from a requested sequence.
type fakeEngine struct {
	t      *testing.T
	pub    zmq4.Socket
	router zmq4.Socket

	mu  sync.Mutex
	buf map[uint64][]byte
}

func startEngine(t *testing.T, pubAddr string, withReplay bool) (*fakeEngine, string, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e := &fakeEngine{t: t, buf: map[uint64][]byte{}}
	e.pub = zmq4.NewPub(ctx)
	require.NoError(t, e.pub.Listen("tcp://"+pubAddr))
	pubEP := "tcp://" + e.pub.Addr().String()
	replayEP := ""
	done := make(chan struct{})
	if withReplay {
		e.router = zmq4.NewRouter(ctx)
		require.NoError(t, e.router.Listen("tcp://127.0.0.1:0"))
		replayEP = "tcp://" + e.router.Addr().String()
		go e.serveReplay(done)
	} else {
		close(done)
	}
	t.Cleanup(func() {
		cancel()
		e.close()
		<-done
	})
	return e, pubEP, replayEP
}

func (e *fakeEngine) close() {
	_ = e.pub.Close()
	if e.router != nil {
		_ = e.router.Close()
	}
}

func (e *fakeEngine) serveReplay(done chan struct{}) {
	defer close(done)
	for {
		msg, err := e.router.Recv()
		if err != nil {
			return
		}
		if len(msg.Frames) != 3 || len(msg.Frames[2]) != 8 {
			continue
		}
		id, start := msg.Frames[0], binary.BigEndian.Uint64(msg.Frames[2])
		e.mu.Lock()
		var seqs []uint64
		for s := range e.buf {
			if s >= start {
				seqs = append(seqs, s)
			}
		}
		slices.Sort(seqs)
		for _, s := range seqs {
			_ = e.router.SendMulti(zmq4.NewMsgFrom(id, []byte{}, be(s), e.buf[s]))
		}
		e.mu.Unlock()
		_ = e.router.SendMulti(zmq4.NewMsgFrom(id, []byte{}, be(^uint64(0)), []byte{}))
	}
}

func be(v uint64) []byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return b[:]
}

// waitSubscribed blocks until a SUB has subscribed, so no published batch is lost to the
// PUB/SUB join race.
func (e *fakeEngine) waitSubscribed() {
	require.Eventually(e.t, func() bool {
		return slices.Contains(e.pub.(zmq4.Topics).Topics(), topic)
	}, 10*time.Second, 5*time.Millisecond)
}

// publish buffers a batch for replay and, when live, sends it.
func (e *fakeEngine) publish(seq uint64, live bool) {
	e.publishRaw(seq, batchPayload(e.t, seq), live)
}

func (e *fakeEngine) publishRaw(seq uint64, payload []byte, live bool) {
	e.mu.Lock()
	e.buf[seq] = payload
	e.mu.Unlock()
	if live {
		require.NoError(e.t, e.pub.SendMulti(zmq4.NewMsgFrom([]byte(topic), be(seq), payload)))
	}
}

func (e *fakeEngine) forget(seq uint64) {
	e.mu.Lock()
	delete(e.buf, seq)
	e.mu.Unlock()
}

// batchPayload is a current-generation batch with one stored block named after seq.
func batchPayload(t testing.TB, seq uint64) []byte {
	return pack(t, []any{float64(time.Now().UnixNano()) / 1e9, []any{map[string]any{"type": "BlockStored",
		"block_hashes": []any{seq + 1000}, "token_ids": seq2(int(seq)*4, 4), "block_size": 4}}, 0})
}

func seq2(from, n int) []any { return seq(from, n) }

func fastOpts() kvevents.Options {
	return kvevents.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond,
		ReplayTimeout: 5 * time.Second, DialTimeout: time.Second}
}

func runZMQ(t *testing.T, cfg kvevents.ZMQConfig) *kvevents.ZMQ {
	t.Helper()
	cfg.Options = fastOpts()
	z, err := kvevents.NewZMQ(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = z.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return z
}

func TestZMQGapRecoveredThroughReplay(t *testing.T) {
	e, pubEP, replayEP := startEngine(t, "127.0.0.1:0", true)
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, ReplayEndpoint: replayEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	e.publish(1, false) // lost on the wire, still in the replay buffer
	e.publish(2, false) // also lost
	e.publish(3, true)
	sink.waitFor(t, "b0", "b1", "b2", "b3")
	e.publish(4, true)
	sink.waitFor(t, "b0", "b1", "b2", "b3", "b4")
	h := z.Health()
	assert.Equal(t, uint64(1), h.Gaps)
	assert.Equal(t, uint64(1), h.Replays)
	assert.Zero(t, h.Resets)
	assert.Equal(t, uint64(4), h.LastSeq)
	assert.Equal(t, uint64(5), h.Batches)
	assert.True(t, h.Connected)
}

func TestZMQGapWithoutReplayResets(t *testing.T) {
	e, pubEP, _ := startEngine(t, "127.0.0.1:0", false)
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	e.publish(1, false)
	e.publish(2, true)
	sink.waitFor(t, "b0", "reset:gap", "b2")
	assert.Equal(t, uint64(1), z.Health().Resets)
}

func TestZMQReplayBufferExpiredResets(t *testing.T) {
	e, pubEP, replayEP := startEngine(t, "127.0.0.1:0", true)
	sink := &recSink{}
	runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, ReplayEndpoint: replayEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	e.publish(1, false)
	e.publish(2, false)
	e.forget(1) // the engine's replay buffer no longer holds seq 1
	e.publish(3, true)
	sink.waitFor(t, "b0", "reset:gap", "b3")
}

func TestZMQSequenceBackwardsIsARestart(t *testing.T) {
	e, pubEP, replayEP := startEngine(t, "127.0.0.1:0", true)
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, ReplayEndpoint: replayEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	e.publish(1, true)
	e.publish(0, true) // the engine restarted: its counter began again
	e.publish(1, true)
	sink.waitFor(t, "b0", "b1", "reset:restart", "b0", "b1")
	assert.Equal(t, uint64(1), z.Health().Resets)
}

func TestZMQPublisherRestartResubscribesAndResets(t *testing.T) {
	e, pubEP, _ := startEngine(t, "127.0.0.1:0", false)
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	e.publish(1, true)
	sink.waitFor(t, "b0", "b1")
	e.close()
	require.Eventually(t, func() bool { return !z.Health().Connected }, 10*time.Second, 5*time.Millisecond)

	e2, _, _ := startEngine(t, pubEP[len("tcp://"):], false)
	e2.waitSubscribed()
	e2.publish(0, true)
	sink.waitFor(t, "b0", "b1", "reset:restart", "b0")
	h := z.Health()
	assert.True(t, h.Connected)
	assert.GreaterOrEqual(t, h.Reconnects, uint64(1))
}

// lineCounter counts log records containing a substring.
type lineCounter struct {
	mu  sync.Mutex
	sub string
	n   int
}

func (c *lineCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if strings.Contains(string(p), c.sub) {
		c.n++
	}
	return len(p), nil
}

func (c *lineCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestZMQGarbageIsCountedNotFatal(t *testing.T) {
	e, pubEP, _ := startEngine(t, "127.0.0.1:0", false)
	sink := &recSink{}
	lines := &lineCounter{sub: "undecodable"}
	opts := fastOpts()
	opts.Logger = slog.New(slog.NewTextHandler(lines, nil))
	opts.LogEvery = time.Hour
	z, err := kvevents.NewZMQ(kvevents.ZMQConfig{Endpoint: pubEP, Topic: topic, Sink: sink, Options: opts})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = z.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	e.waitSubscribed()
	e.publishRaw(0, []byte("\xdd\xff\xff\xff\xffnot a batch"), true)
	require.NoError(t, e.pub.SendMulti(zmq4.NewMsgFrom([]byte(topic), []byte("short"))))
	require.NoError(t, e.pub.SendMulti(zmq4.NewMsgFrom([]byte(topic), []byte{1, 2, 3}, []byte{0x90})))
	e.publish(1, true)
	sink.waitFor(t, "b1")
	h := z.Health()
	assert.Equal(t, uint64(3), h.DecodeErrors)
	assert.Zero(t, h.Resets, "an undecodable batch consumes its sequence number: no gap follows")
	assert.NotEmpty(t, h.LastError)
	assert.Equal(t, 1, lines.count(), "one log line per interval, however many bad messages")
}

func TestZMQStalledStreamShowsInHealth(t *testing.T) {
	e, pubEP, _ := startEngine(t, "127.0.0.1:0", false)
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	sink.waitFor(t, "b0")
	h := z.Health()
	require.True(t, h.Connected)
	assert.False(t, h.LastBatchAt.IsZero())
	later := h.LastBatchAt.Add(time.Minute)
	assert.True(t, h.Stalled(later, 30*time.Second), "a connected stream silent for a minute is stalled")
	assert.False(t, h.Stalled(h.LastBatchAt.Add(time.Second), 30*time.Second))
	assert.Equal(t, time.Minute, h.Idle(later))
}

func TestZMQDialFailuresBackOff(t *testing.T) {
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: "tcp://127.0.0.1:1", Topic: topic, Sink: sink})
	require.Eventually(t, func() bool { return z.Health().DialFailures >= 2 }, 10*time.Second, 5*time.Millisecond)
	assert.False(t, z.Health().Connected)
	assert.NotEmpty(t, z.Health().LastError)
}

func TestZMQLiveBatchesAlreadyReplayedAreDuplicates(t *testing.T) {
	e, pubEP, replayEP := startEngine(t, "127.0.0.1:0", true)
	sink := &recSink{}
	z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, ReplayEndpoint: replayEP, Topic: topic, Sink: sink})
	e.waitSubscribed()
	e.publish(0, true)
	e.publish(1, false)
	e.publish(3, false) // in the replay buffer before 2 arrives live: the replay returns it early
	e.publish(2, true)
	sink.waitFor(t, "b0", "b1", "b2", "b3")
	e.publish(3, true) // arrives live after the replay delivered it
	e.publish(4, true)
	sink.waitFor(t, "b0", "b1", "b2", "b3", "b4")
	assert.Zero(t, z.Health().Resets, "a replayed batch seen again live is not a restart")
}

func TestZMQFirstContactReplaysTheBufferedHistory(t *testing.T) {
	for name, c := range map[string]struct {
		buffered []uint64
		want     []string
	}{
		"whole history":   {[]uint64{0, 1, 2, 3}, []string{"b0", "b1", "b2", "b3", "b4"}},
		"oldest expired":  {[]uint64{2, 3}, []string{"b2", "b3", "b4"}},
		"hole in history": {[]uint64{0, 2, 3}, []string{"b4"}},
	} {
		t.Run(name, func(t *testing.T) {
			e, pubEP, replayEP := startEngine(t, "127.0.0.1:0", true)
			for _, s := range c.buffered {
				e.publish(s, false) // published before the gateway subscribed
			}
			sink := &recSink{}
			z := runZMQ(t, kvevents.ZMQConfig{Endpoint: pubEP, ReplayEndpoint: replayEP, Topic: topic, Sink: sink})
			e.waitSubscribed()
			e.publish(4, true)
			sink.waitFor(t, c.want...)
			e.publish(5, true)
			sink.waitFor(t, append(c.want, "b5")...)
			h := z.Health()
			assert.Zero(t, h.Resets)
			assert.Zero(t, h.Gaps, "the first batch seen is not a gap")
		})
	}
}
