package watchdog

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/progress"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// engineFake hangs every client leg until its context ends; canaries (request id
// smg-canary-…) answer 200 when alive, else hang too.
type engineFake struct {
	alive    atomic.Bool
	canaries atomic.Int32
	release  chan struct{} // a canary answers once it is closed
}

func (e *engineFake) Send(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	if strings.HasPrefix(req.Header.Get(wire.HeaderRequestID), wire.CanaryRequestIDPrefix) {
		e.canaries.Add(1)
		<-e.release
		if e.alive.Load() {
			return &ports.LegResponse{Status: 200, Body: io.NopCloser(bytes.NewReader([]byte(`{"text":"x"}`)))}, nil
		}
	}
	<-ctx.Done()
	return nil, context.Cause(ctx)
}

type breakersFake struct {
	mu      sync.Mutex
	ejected []string
}

func (b *breakersFake) Eject(l *worker.Live) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.ejected = append(b.ejected, l.ID)
	return true
}
func (*breakersFake) ProbeDue(*worker.Live) bool { return false }
func (*breakersFake) Probe(*worker.Live, bool)   {}

func (b *breakersFake) got() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.ejected...)
}

// A leg that makes no progress makes its worker suspect after the floor: it is gated at once
// and gets a canary. A passing canary clears it and the leg runs on; a failing one ejects it
// and cuts the stranded leg with an unresponsive error.
func TestSuspectCanaryVerdicts(t *testing.T) {
	t.Parallel()
	store := memory.NewWorkers()
	l := worker.NewLive(worker.Worker{ID: "d1", URL: "http://127.0.0.1:1", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM}, worker.StatusReady)
	require.NoError(t, store.Add(l))
	br := &breakersFake{}
	w := New(Options{Stall: progress.Settings{Floor: 5 * time.Second, Ceiling: 30 * time.Second, Factor: 10},
		CanaryTimeout: time.Second}, store, br)
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	w.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	fe := &engineFake{release: make(chan struct{})}
	fe.alive.Store(true)
	eng := w.WrapEngine(fe)

	errc := make(chan error, 1)
	go func() {
		_, err := eng.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/v1/completions"})
		errc <- err
	}()
	require.Eventually(t, func() bool { s := w.lookup("d1"); return s != nil && s.tr.InFlight() == 1 }, 5*time.Second, time.Millisecond)

	advance(4 * time.Second)
	w.Check(context.Background())
	assert.False(t, l.Suspect(), "within the floor")
	assert.Zero(t, fe.canaries.Load())

	advance(time.Second)
	w.Check(context.Background())
	assert.True(t, l.Suspect(), "a stalled leg makes its worker suspect at once")
	assert.False(t, l.Available(), "a suspect worker takes no new legs")
	close(fe.release)
	require.Eventually(t, func() bool { return !l.Suspect() && !w.lookup("d1").probing.Load() }, 5*time.Second, time.Millisecond, "a passing canary clears it")
	assert.Equal(t, int32(1), fe.canaries.Load())
	assert.True(t, l.Available())
	assert.Empty(t, br.got(), "no ejection")
	select {
	case err := <-errc:
		t.Fatalf("the leg was cut by a passing canary: %v", err)
	default:
	}

	fe.alive.Store(false)
	advance(5 * time.Second)
	w.Check(context.Background())
	require.True(t, l.Suspect())
	var err error
	select {
	case err = <-errc:
	case <-time.After(5 * time.Second):
		t.Fatal("the stranded leg was not cut after the failed canary")
	}
	assert.True(t, errors.Is(err, errs.ErrUnresponsive), "cut as unresponsive: %v", err)
	assert.Equal(t, []string{"d1"}, br.got(), "the failed canary ejected it")
	assert.False(t, l.Suspect(), "the open breaker holds it out now")
	assert.Equal(t, int32(2), fe.canaries.Load())
}

// genFake is a gRPC engine whose client legs send nothing and ignore their context until an
// Abort RPC names them; then they answer as SGLang does, with a complete whose
// finish_reason is "abort". Canaries hang until their context ends.
type genFake struct {
	mu      sync.Mutex
	aborted map[string]chan struct{}
}

type genStream struct{ abort chan struct{} }

func (s genStream) Recv() (ports.GRPCEvent, error) {
	<-s.abort
	return ports.GRPCEvent{Complete: true, Finish: "abort"}, nil
}
func (genStream) Close() {}

func (g *genFake) Generate(ctx context.Context, l ports.GRPCLeg) (ports.GRPCStream, error) {
	if strings.HasPrefix(l.RequestID, wire.CanaryRequestIDPrefix) {
		<-ctx.Done()
		return nil, context.Cause(ctx)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	ch := make(chan struct{})
	g.aborted[l.RequestID] = ch
	return genStream{abort: ch}, nil
}

func (g *genFake) Abort(_ context.Context, _ worker.Worker, _ string, ids ...string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, id := range ids {
		if ch, ok := g.aborted[id]; ok {
			close(ch)
			delete(g.aborted, id)
		}
	}
	return nil
}

// A gRPC leg the watchdog cut fails with the unresponsive stall error even when the engine
// answers the cut's Abort RPC with a complete (finish_reason abort) before its stream ends:
// that complete is not the leg's answer.
func TestCutGRPCLegIgnoresTheAbortsAnswer(t *testing.T) {
	t.Parallel()
	store := memory.NewWorkers()
	l := worker.NewLive(worker.Worker{ID: "d1", URL: "grpc://127.0.0.1:1", Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang,
		Mode: worker.ConnGRPC}, worker.StatusReady)
	require.NoError(t, store.Add(l))
	br := &breakersFake{}
	w := New(Options{Stall: progress.Settings{Floor: 5 * time.Second, Ceiling: 30 * time.Second, Factor: 10},
		CanaryTimeout: 50 * time.Millisecond}, store, br)
	clock := time.Unix(1000, 0)
	var mu sync.Mutex
	w.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	gen := w.WrapGenerator(&genFake{aborted: map[string]chan struct{}{}})

	st, err := gen.Generate(context.Background(), ports.GRPCLeg{Worker: l, RequestID: "req-1"})
	require.NoError(t, err)
	type result struct {
		ev  ports.GRPCEvent
		err error
	}
	got := make(chan result, 1)
	go func() { ev, err := st.Recv(); got <- result{ev, err} }()
	mu.Lock()
	clock = clock.Add(6 * time.Second)
	mu.Unlock()
	w.Check(context.Background())
	require.True(t, l.Suspect())
	var r result
	select {
	case r = <-got:
	case <-time.After(5 * time.Second):
		t.Fatal("the stranded leg was not cut after the failed canary")
	}
	w.Wait()
	assert.False(t, r.ev.Complete, "the abort's complete is not the leg's answer: %+v", r.ev)
	assert.True(t, errors.Is(r.err, errs.ErrUnresponsive), "cut as unresponsive: %v", r.err)
	assert.Equal(t, []string{"d1"}, br.got(), "the failed canary ejected it")
	st.Close()
}
