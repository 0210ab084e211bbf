package pipeline_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/pipeline"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// flushWriter records what reached the client: the body as of each Flush.
type flushWriter struct {
	mu      sync.Mutex
	h       http.Header
	body    bytes.Buffer
	flushed int // bytes of body flushed so far
	flushes int
}

func (w *flushWriter) Header() http.Header { return w.h }
func (w *flushWriter) WriteHeader(int)     {}
func (w *flushWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}

func (w *flushWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.flushed, w.flushes = w.body.Len(), w.flushes+1
}

// sent is the flushed part of the body and the number of flushes.
func (w *flushWriter) sent() (string, int, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()[:w.flushed], w.flushes, w.body.Len()
}

// pausedGen answers the prefill at once; the decode sends first, waits for resume, then
// sends rest.
type pausedGen struct {
	first, rest []ports.GRPCEvent
	resume      chan struct{}
}

func (g *pausedGen) Generate(_ context.Context, leg ports.GRPCLeg) (ports.GRPCStream, error) {
	if leg.Worker.Role == worker.RolePrefill {
		return &scripted{events: []ports.GRPCEvent{{Complete: true, IDs: []uint32{1}, Finish: "length", PromptTokens: 3}}}, nil
	}
	return &pausingStream{first: append([]ports.GRPCEvent(nil), g.first...), rest: append([]ports.GRPCEvent(nil), g.rest...), resume: g.resume}, nil
}

func (g *pausedGen) Abort(context.Context, worker.Worker, string, ...string) error { return nil }

type pausingStream struct {
	first, rest []ports.GRPCEvent
	resume      <-chan struct{}
}

func (s *pausingStream) Recv() (ports.GRPCEvent, error) {
	if len(s.first) == 0 && s.resume != nil {
		<-s.resume
		s.resume = nil
	}
	evs := &s.first
	if len(s.first) == 0 {
		evs = &s.rest
	}
	if len(*evs) == 0 {
		return ports.GRPCEvent{}, io.EOF
	}
	ev := (*evs)[0]
	*evs = (*evs)[1:]
	return ev, nil
}

func (s *pausingStream) Close() {}

// A burst of decode messages leaves in fewer flushes than events, yet no event waits for
// a later message: when the engine pauses, everything written so far has been flushed;
// at the end nothing is left unflushed.
func TestStreamFlushesBurstsAndBeforeWaiting(t *testing.T) {
	m := sharedModel(t, texttest.Dir(t, texttest.Qwen3))
	ids := m.Tokenizer.Encode("one two three four five six seven eight nine ten eleven twelve", false)
	require.GreaterOrEqual(t, len(ids), 12)
	g := &pausedGen{resume: make(chan struct{})}
	half := len(ids) / 2
	for _, id := range ids[:half] {
		g.first = append(g.first, ports.GRPCEvent{IDs: []uint32{id}})
	}
	for _, id := range ids[half:] {
		g.rest = append(g.rest, ports.GRPCEvent{IDs: []uint32{id}})
	}
	g.rest = append(g.rest, ports.GRPCEvent{Complete: true, IDs: ids[len(ids)-1:], Finish: "length", PromptTokens: 3})
	reg := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
	reg.Put("sim-model", m)
	pl := pipeline.New(pipeline.Deps{Config: config.Default(), Text: reg, Engines: g})
	mk := func(role worker.Role) *worker.Live {
		return worker.NewLive(worker.Worker{ID: string(role), URL: "grpc://127.0.0.1:1", Role: role, Runtime: worker.RuntimeSGLang,
			Mode: worker.ConnGRPC, Models: []string{"sim-model"}}, worker.StatusReady)
	}
	rq, err := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"sim-model","stream":true,"max_tokens":64,"prompt":"x"}`))
	require.NoError(t, err)
	w := &flushWriter{h: http.Header{}}
	done := make(chan error, 1)
	go func() {
		_, err := pl.Attempt(context.Background(), w, rq, mk(worker.RolePrefill), mk(worker.RoleDecode), nil)
		done <- err
	}()
	// Paused after the first half: its events must have reached the client.
	want := m.Tokenizer.Decode(ids[:half], true)
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, _, _ := w.sent()
		if joinedText(out) == want {
			break
		}
		require.True(t, time.Now().Before(deadline), "the events before the pause were not flushed: %q", out)
		time.Sleep(5 * time.Millisecond)
	}
	close(g.resume)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the attempt did not finish")
	}
	out, flushes, total := w.sent()
	assert.Equal(t, total, len(out), "nothing is left unflushed")
	assert.True(t, strings.HasSuffix(out, "data: [DONE]\n\n"))
	assert.Equal(t, m.Tokenizer.Decode(ids, true), joinedText(out))
	events := strings.Count(out, "data: ")
	assert.Less(t, flushes, events/2, "bursts share flushes (%d flushes for %d events)", flushes, events)
}

// joinedText is the concatenated "text" of a completions stream's chunks.
func joinedText(sse string) string {
	var b strings.Builder
	for _, line := range strings.Split(sse, "\n") {
		const key = `"text":"`
		i := strings.Index(line, key)
		if i < 0 {
			continue
		}
		rest := line[i+len(key):]
		if j := strings.Index(rest, `"`); j >= 0 {
			b.WriteString(rest[:j])
		}
	}
	return b.String()
}
