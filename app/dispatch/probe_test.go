package dispatch_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// ProbePair refuses, before any leg is contacted (no engine is configured: a dispatch would
// panic), an unknown worker (404), a worker of the wrong role and a pair the pairing mode
// refuses, or a draining worker (400), naming the worker or the differing components.
func TestProbePairRefusesWhatCannotBeProbed(t *testing.T) {
	t.Parallel()
	st := memory.NewWorkers()
	for _, w := range []worker.Worker{
		{ID: "p", URL: "http://127.0.0.1:10001", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "NixlConnector"},
		{ID: "d", URL: "http://127.0.0.1:10002", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "NixlConnector"},
		{ID: "dm", URL: "http://127.0.0.1:10003", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "MooncakeConnector"},
		{ID: "dd", URL: "http://127.0.0.1:10004", Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "NixlConnector"},
	} {
		st0 := worker.StatusReady
		if w.ID == "dd" {
			st0 = worker.StatusDraining
		}
		require.NoError(t, st.Add(worker.NewLive(w, st0)))
	}
	cfg := config.Default()
	cfg.PDDisaggregation = true
	d := dispatch.New(dispatch.Deps{Config: cfg, Store: st})
	for _, c := range []struct {
		name, prefill, decode string
		status                int
		code, says            string
	}{
		{"unknown prefill", "nope", "d", http.StatusNotFound, wire.CodeWorkerNotFound, "nope"},
		{"unknown decode URL", "p", "http://127.0.0.1:9", http.StatusNotFound, wire.CodeWorkerNotFound, "http://127.0.0.1:9"},
		{"decode named as the prefill", "d", "d", http.StatusBadRequest, wire.CodeWorkerBadRequest, "worker d is a decode worker, not a prefill"},
		{"prefill named as the decode", "p", "http://127.0.0.1:10001/", http.StatusBadRequest, wire.CodeWorkerBadRequest, "worker p is a prefill worker, not a decode"},
		{"empty decode", "p", " ", http.StatusBadRequest, wire.CodeWorkerBadRequest, "a decode worker id or URL is required"},
		{"incompatible pair", "p", "dm", http.StatusBadRequest, wire.CodeWorkerBadRequest, "transport"},
		{"draining decode", "p", "dd", http.StatusBadRequest, wire.CodeWorkerBadRequest, "worker dd is draining"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := d.ProbePair(context.Background(), c.prefill, c.decode)
			e, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, c.status, e.Status)
			assert.Equal(t, c.code, e.Code)
			assert.Contains(t, e.Message, c.says)
		})
	}
}
