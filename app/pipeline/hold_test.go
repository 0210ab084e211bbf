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
	"github.com/smg-go/smg/domain/respond"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/text/texttest"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// scripted is a GRPCStream that returns its events (after gate closes, when set), then
// io.EOF; eof is closed when the EOF is handed out.
type scripted struct {
	gate   <-chan struct{}
	events []ports.GRPCEvent
	eof    chan struct{}
	once   sync.Once
}

func (s *scripted) Recv() (ports.GRPCEvent, error) {
	if s.gate != nil {
		<-s.gate
		s.gate = nil
	}
	if len(s.events) == 0 {
		if s.eof != nil {
			s.once.Do(func() { close(s.eof) })
		}
		return ports.GRPCEvent{}, io.EOF
	}
	ev := s.events[0]
	s.events = s.events[1:]
	return ev, nil
}

func (s *scripted) Close() {}

// scriptedGen answers the prefill leg after release closes and the decode leg at once.
type scriptedGen struct {
	release     chan struct{}
	decodeEOF   chan struct{}
	decodeItems []ports.GRPCEvent
}

func (g *scriptedGen) Generate(_ context.Context, leg ports.GRPCLeg) (ports.GRPCStream, error) {
	if leg.Worker.Role == worker.RolePrefill {
		return &scripted{gate: g.release, events: []ports.GRPCEvent{{Complete: true, IDs: []uint32{1}, Finish: "length", PromptTokens: 3}}}, nil
	}
	return &scripted{events: append([]ports.GRPCEvent(nil), g.decodeItems...), eof: g.decodeEOF}, nil
}

func (g *scriptedGen) Abort(context.Context, worker.Worker, string, ...string) error { return nil }

// lockedWriter is a ResponseWriter whose body can be read while the pipeline writes.
type lockedWriter struct {
	mu   sync.Mutex
	h    http.Header
	body bytes.Buffer
}

func (w *lockedWriter) Header() http.Header { return w.h }
func (w *lockedWriter) WriteHeader(int)     {}
func (w *lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.Write(b)
}
func (w *lockedWriter) Flush() {}
func (w *lockedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.body.String()
}

// A streamed chat that asks for logprobs holds the decode's output until its prefill
// answered (grpc.md §1.8); without logprobs the decode streams while the prefill runs.
// The decode here has handed out everything, its trailing no-op chunks included, before the
// check: with more of them than the reader reads ahead, every item before them was fully
// processed.
func TestStreamWithLogprobsWaitsForThePrefill(t *testing.T) {
	dir := texttest.Dir(t, texttest.Qwen3)
	m := sharedModel(t, dir)
	ids := m.Tokenizer.Encode("held tokens", false)
	lps := func(id uint32) []respond.Logprob { return []respond.Logprob{{TokenID: id, Logprob: -0.5}} }
	for _, withLogprobs := range []bool{true, false} {
		g := &scriptedGen{release: make(chan struct{}), decodeEOF: make(chan struct{})}
		for _, id := range ids {
			g.decodeItems = append(g.decodeItems, ports.GRPCEvent{IDs: []uint32{id}, Logprobs: lps(id)})
		}
		g.decodeItems = append(g.decodeItems, ports.GRPCEvent{Complete: true, IDs: ids[len(ids)-1:], Finish: "length", PromptTokens: 3})
		for range 32 { // more no-op chunks than a streamed decode's reader reads ahead (16)
			g.decodeItems = append(g.decodeItems, ports.GRPCEvent{})
		}
		reg := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
		reg.Put("sim-model", m)
		pl := pipeline.New(pipeline.Deps{Config: config.Default(), Text: reg, Engines: g})
		mk := func(role worker.Role) *worker.Live {
			return worker.NewLive(worker.Worker{ID: string(role), URL: "grpc://127.0.0.1:1", Role: role, Runtime: worker.RuntimeSGLang,
				Mode: worker.ConnGRPC, Models: []string{"sim-model"}}, worker.StatusReady)
		}
		body := `{"model":"sim-model","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"x"}]`
		if withLogprobs {
			body += `,"logprobs":true`
		}
		rq, err := handoff.Inspect(handoff.RouteChat, []byte(body+`}`))
		require.NoError(t, err)
		w := &lockedWriter{h: http.Header{}}
		done := make(chan error, 1)
		go func() {
			_, err := pl.Attempt(context.Background(), w, rq, mk(worker.RolePrefill), mk(worker.RoleDecode), nil)
			done <- err
		}()
		select {
		case <-g.decodeEOF:
		case <-time.After(10 * time.Second):
			t.Fatal("the decode stream was not read to its end")
		}
		if withLogprobs {
			assert.Empty(t, w.String(), "nothing streamed before the prefill answered")
		} else {
			assert.Contains(t, w.String(), "data: ", "the decode streams while the prefill runs")
		}
		close(g.release)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the attempt did not finish")
		}
		out := w.String()
		assert.True(t, strings.HasSuffix(out, "data: [DONE]\n\n"), out)
		assert.Equal(t, withLogprobs, strings.Contains(out, `"logprobs":{"content"`), out)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, pl.Close(ctx))
		cancel()
	}
}
