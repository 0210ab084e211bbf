package dispatch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// legFunc answers one leg of the fake engine.
type legFunc func(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error)

type fakeEngine struct{ prefill, decode legFunc }

func (f fakeEngine) Send(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	if req.Worker.Role == worker.RolePrefill {
		return f.prefill(ctx, req)
	}
	return f.decode(ctx, req)
}

type outcome struct {
	w      string
	status int
	err    error
}

type outcomes struct {
	mu  sync.Mutex
	got []outcome
}

func (o *outcomes) Record(w *worker.Live, status int, err error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, outcome{w.URL, status, err})
}

func (o *outcomes) all() []outcome {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]outcome(nil), o.got...)
}

func jsonResp(status int, body string) *ports.LegResponse {
	return &ports.LegResponse{Status: status, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(body))}
}

// waitCancel blocks like a WRITE decode waiting for a push, until the gateway drops it.
func waitCancel(done chan<- struct{}) legFunc {
	return func(ctx context.Context, _ ports.LegRequest) (*ports.LegResponse, error) {
		<-ctx.Done()
		if done != nil {
			close(done)
		}
		return nil, ctx.Err()
	}
}

// handoffOf answers the prefill with a valid handoff for its tag, after delay.
func handoffOf(delay time.Duration, mutate func(map[string]any)) legFunc {
	return func(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
		var b struct {
			KV struct {
				ID string `json:"transfer_id"`
			} `json:"kv_transfer_params"`
		}
		_ = json.Unmarshal(req.Body, &b)
		h := map[string]any{"transfer_id": b.KV.ID, "remote_engine_id": "e", "remote_block_ids": []int{1},
			"remote_host": "10.0.0.1", "remote_handshake_port": 6301, "remote_notify_port": 61005}
		if mutate != nil {
			mutate(h)
		}
		out, _ := json.Marshal(map[string]any{"choices": []any{}, "kv_transfer_params": h})
		select {
		case <-time.After(delay):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		return jsonResp(200, string(out)), nil
	}
}

func concurrentPair() (p, d *worker.Live) {
	p = worker.NewLive(worker.Worker{ID: "p", URL: "http://10.0.0.1:8000", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM,
		KVConnector: "MoRIIOConnector", Labels: map[string]string{"moriio_mode": "write"}}, worker.StatusReady)
	d = worker.NewLive(worker.Worker{ID: "d", URL: "http://10.0.0.2:8000", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM,
		KVConnector: "MoRIIOConnector", Labels: map[string]string{"moriio_mode": "write", "moriio_write_dispatch": "concurrent"}}, worker.StatusReady)
	return p, d
}

func runConcurrent(t *testing.T, eng fakeEngine) (*httptest.ResponseRecorder, *outcomes, error) {
	t.Helper()
	rec := &outcomes{}
	d := New(Deps{Config: config.Default(), Engine: eng, Outcomes: rec})
	rq, err := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"m","prompt":"p","max_tokens":4}`))
	require.NoError(t, err)
	p, dc := concurrentPair()
	w := httptest.NewRecorder()
	_, err = d.moriio(context.Background(), w, rq, p, dc, http.Header{})
	return w, rec, err
}

// Seed "Failures, Cancellation, and Streaming": under concurrent MoRI-IO WRITE the first leg
// to fail answers, and the leg SMG drops records no outcome on its worker.
func TestMoRIIOConcurrentDroppedLegRecordsNothing(t *testing.T) {
	t.Parallel()
	t.Run("a failing prefill drops the decode", func(t *testing.T) {
		t.Parallel()
		dropped := make(chan struct{})
		w, rec, err := runConcurrent(t, fakeEngine{
			prefill: func(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
				return jsonResp(500, `{"error":{"message":"boom"}}`), nil
			},
			decode: waitCancel(dropped)})
		f := faultOf(err)
		require.NotNil(t, f, "%v", err)
		assert.Equal(t, "p", f.w.ID)
		assert.Equal(t, "prefill_upstream_error", f.e.Code)
		assert.Equal(t, 500, f.e.Status)
		<-dropped
		assert.Empty(t, rec.all(), "the fault is the retry loop's to record; the dropped decode records nothing")
		assert.Zero(t, w.Body.Len())
	})
	t.Run("a decode refusal does not wait for the prefill, which is dropped", func(t *testing.T) {
		t.Parallel()
		dropped := make(chan struct{})
		start := time.Now()
		_, rec, err := runConcurrent(t, fakeEngine{
			prefill: waitCancel(dropped),
			decode: func(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
				return jsonResp(400, `{"error":{"message":"bad"}}`), nil
			}})
		f := faultOf(err)
		require.NotNil(t, f, "%v", err)
		assert.Equal(t, "d", f.w.ID)
		assert.Equal(t, "decode_bad_request", f.e.Code)
		<-dropped
		assert.Less(t, time.Since(start), 5*time.Second, "hang guard")
		time.Sleep(20 * time.Millisecond) // the prefill goroutine's end
		assert.Empty(t, rec.all(), "the dropped prefill records nothing")
	})
	t.Run("an arrived decode answer is held until the handoff passed, then dropped", func(t *testing.T) {
		t.Parallel()
		w, rec, err := runConcurrent(t, fakeEngine{
			prefill: handoffOf(30*time.Millisecond, func(h map[string]any) { h["remote_notify_port"] = 1 }),
			decode: func(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
				return jsonResp(200, `{"choices":[{"text":"already here"}]}`), nil
			}})
		f := faultOf(err)
		require.NotNil(t, f, "%v", err)
		assert.Equal(t, "p", f.w.ID)
		assert.Equal(t, "moriio_handoff_invalid", f.e.Code)
		assert.Zero(t, w.Body.Len(), "nothing of the decode answer was written")
		assert.Empty(t, rec.all())
	})
	t.Run("both legs succeed: each records once", func(t *testing.T) {
		t.Parallel()
		w, rec, err := runConcurrent(t, fakeEngine{
			prefill: handoffOf(10*time.Millisecond, nil),
			decode: func(context.Context, ports.LegRequest) (*ports.LegResponse, error) {
				return jsonResp(200, `{"choices":[{"text":"done"}]}`), nil
			}})
		require.NoError(t, err)
		assert.Equal(t, `{"choices":[{"text":"done"}]}`, w.Body.String())
		assert.ElementsMatch(t, []outcome{{"http://10.0.0.1:8000", 200, nil}, {"http://10.0.0.2:8000", 200, nil}}, rec.all())
	})
}
