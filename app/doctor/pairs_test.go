package doctor_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

// A pair with a draining prefill or decode is not probed (the gateway would refuse it, and a
// probe would put new work on a worker being emptied); the note counts those pairs.
func TestPairProbesSkipDrainingWorkers(t *testing.T) {
	t.Parallel()
	nixl := func(id string, r worker.Role) worker.Worker {
		return worker.Worker{ID: id, URL: "http://127.0.0.1:1/" + id, Role: r, Runtime: worker.RuntimeVLLM,
			Mode: worker.ConnHTTP, KVConnector: "NixlConnector"}
	}
	ws := []worker.Worker{nixl("p1", worker.RolePrefill), nixl("p2", worker.RolePrefill),
		nixl("d1", worker.RoleDecode), nixl("d2", worker.RoleDecode)}
	var mu sync.Mutex
	var probed [][2]string
	o := doctor.Options{Mode: pairing.ModeLenient, Draining: map[string]bool{"p2": true, "d2": true},
		ProbePair: func(_ context.Context, p, d worker.Worker) (doctor.PairProbe, error) {
			mu.Lock()
			defer mu.Unlock()
			probed = append(probed, [2]string{p.ID, d.ID})
			return doctor.PairProbe{Outcome: doctor.PairKVReceived}, nil
		}}
	fs := doctor.Check(context.Background(), ws, o)
	assert.Equal(t, [][2]string{{"p1", "d1"}}, probed)
	var notes []string
	for _, f := range fs {
		if f.Kind == doctor.KindPairsNotProbed {
			notes = append(notes, f.Message)
		}
	}
	require.Len(t, notes, 1)
	assert.Contains(t, notes[0], "3 of 4 compatible prefill/decode pairs were not probed: their prefill or decode is draining")
}
