package breaker_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/adapters/breaker"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func TestModuleAttachesBreakersFromTheFlags(t *testing.T) {
	t.Parallel()
	var set *breaker.Set
	var store ports.WorkerStore
	app := fxtest.New(t, fx.Supply(config.Default(), breaker.Settings{FailureThreshold: 2, MaxEjectionPercent: 100}),
		memory.Module(), breaker.Module(), fx.Populate(&set, &store))
	app.RequireStart()
	defer app.RequireStop()

	l := worker.NewLive(worker.Worker{ID: "d", URL: "http://127.0.0.1:21", Role: worker.RoleDecode}, worker.StatusReady)
	require.NoError(t, store.Add(l))
	set.Record(l, 500, nil)
	assert.True(t, l.Available(), "failure threshold 2: one failure keeps it closed")
	set.Record(l, 500, nil)
	assert.False(t, l.Available())
}
