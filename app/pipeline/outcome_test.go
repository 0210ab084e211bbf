package pipeline_test

import (
	"context"
	"net/http"
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

// countingOutcomes records every leg outcome the pipeline reports, by worker id.
type countingOutcomes struct {
	mu  sync.Mutex
	got map[string][]int
}

func (c *countingOutcomes) Record(w *worker.Live, status int, _ error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got[w.ID] = append(c.got[w.ID], status)
}

func (c *countingOutcomes) of(id string) []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int(nil), c.got[id]...)
}

// A decode whose stream ends before its prefill's complete arrives (the SGLang prefill
// answers after the handoff; the decode may finish first) is recorded once, held for
// logprobs or not, and the prefill once: the prefill's complete and its end each release the
// held items, and neither may judge the decode again.
func TestDecodeEndingBeforeThePrefillIsRecordedOnce(t *testing.T) {
	m := sharedModel(t, texttest.Dir(t, texttest.Qwen3))
	ids := m.Tokenizer.Encode("done early", false)
	for _, withLogprobs := range []bool{true, false} {
		g := &scriptedGen{release: make(chan struct{}), decodeEOF: make(chan struct{})}
		for _, id := range ids {
			g.decodeItems = append(g.decodeItems, ports.GRPCEvent{IDs: []uint32{id}})
		}
		g.decodeItems = append(g.decodeItems, ports.GRPCEvent{Complete: true, IDs: ids[len(ids)-1:], Finish: "length", PromptTokens: 3})
		reg := text.NewRegistry(text.OSFiles{}, nil, text.LoadOptions{})
		reg.Put("sim-model", m)
		rec := &countingOutcomes{got: map[string][]int{}}
		pl := pipeline.New(pipeline.Deps{Config: config.Default(), Text: reg, Engines: g, Outcomes: rec})
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
		close(g.release)
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("the attempt did not finish")
		}
		assert.Equal(t, []int{http.StatusOK}, rec.of(string(worker.RoleDecode)), "logprobs %v: the decode is recorded once", withLogprobs)
		assert.Equal(t, []int{http.StatusOK}, rec.of(string(worker.RolePrefill)), "logprobs %v: the prefill is recorded once", withLogprobs)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		require.NoError(t, pl.Close(ctx))
		cancel()
	}
}
