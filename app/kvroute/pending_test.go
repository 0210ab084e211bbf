package kvroute_test

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/domain/worker"
)

// A gRPC worker registered before its runtime is detected is subscribed when the registry
// swaps in the detected worker, not before: an attempt on runtime "unspecified" could only
// fail (kvevents.ClientFor) and log a WARN for a worker about to be subscribed anyway.
// TRT-LLM workers have no event service: no attempt, no WARN.
func TestGRPCWorkerIsSubscribedOnceItsRuntimeIsKnown(t *testing.T) {
	t.Parallel()
	var log syncBuf
	dials := 0
	r, err := kvroute.New(kvroute.Options{
		Dial: func(w worker.Worker) (kvevents.KvEventsClient, error) {
			dials++
			if _, err := kvevents.ClientFor(w, nil); err != nil { // the real dialer's runtime check
				return nil, err
			}
			return unimplemented{}, nil // an engine without the stream: nothing is dialled
		},
		Subscriber: kvevents.Options{Logger: slog.New(slog.NewTextHandler(&log, nil)), BackoffMin: 5 * time.Millisecond, BackoffMax: 50 * time.Millisecond}})
	require.NoError(t, err)
	store := memory.NewWorkers()
	r.Watch(store)
	r.Start()
	t.Cleanup(r.Stop)

	pending := worker.NewLive(worker.Worker{ID: "p", URL: "grpc://127.0.0.1:21", Mode: worker.ConnGRPC, Role: worker.RolePrefill,
		Runtime: worker.RuntimeUnspecified, Models: []string{"m"}}, worker.StatusPending)
	require.NoError(t, store.Add(pending))
	trt := worker.NewLive(worker.Worker{ID: "t", URL: "grpc://127.0.0.1:22", Mode: worker.ConnGRPC, Role: worker.RolePrefill,
		Runtime: worker.RuntimeTRTLLM, Models: []string{"m"}}, worker.StatusReady)
	require.NoError(t, store.Add(trt))
	_, ok := r.Health(pending.URL)
	assert.False(t, ok, "not subscribed while the runtime is unknown")
	_, ok = r.Health(trt.URL)
	assert.False(t, ok)
	assert.Zero(t, dials)

	detected := pending.Worker
	detected.Runtime = worker.RuntimeVLLM
	require.NoError(t, store.Replace(pending, worker.NewLive(detected, worker.StatusReady)))
	_, ok = r.Health(pending.URL)
	assert.True(t, ok, "subscribed once the detected worker is swapped in")
	assert.Equal(t, 1, dials)
	assert.NotContains(t, log.String(), "not subscribed")
}
