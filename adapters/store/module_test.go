package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/adapters/store"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/ports"
)

func TestModuleSelectsAdapters(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name      string
		url       func(t *testing.T) string
		wantSlots any
	}{
		{"no redis url: in-memory", func(*testing.T) string { return "" }, &memory.Slots{}},
		{"redis url: fallback over redis", func(t *testing.T) string { return redistest.URL(t) }, &store.FallbackSlots{}},
		{"redis down at start: fallback, start succeeds", func(t *testing.T) string { return "redis://" + redistest.DeadAddr(t) + "/0" }, &store.FallbackSlots{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var slots ports.SlotCounter
			var sticky ports.StickyStore
			var fleet ports.FleetStore
			app := fxtest.New(t, fx.Supply(store.SharedOptions{RedisURL: c.url(t)}, quiet), store.Module(), fx.Populate(&slots, &sticky, &fleet))
			app.RequireStart()
			defer app.RequireStop()
			assert.IsType(t, c.wantSlots, slots)
			_, inMemory := slots.(*memory.Slots)
			assert.Equal(t, inMemory, fleet == nil, "a shared fleet exactly when Redis is configured")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			key := redistest.Prefix() + "k"
			require.NoError(t, sticky.Set(ctx, key, "http://127.0.0.1:1", time.Minute))
			got, ok, err := sticky.Get(ctx, key)
			require.NoError(t, err)
			assert.True(t, ok)
			assert.Equal(t, "http://127.0.0.1:1", got)
			require.NoError(t, sticky.Delete(ctx, key))
			l, ok, err := slots.Claim(ctx, "http://127.0.0.1:1/"+key, 1, 1)
			require.NoError(t, err)
			require.True(t, ok)
			require.NoError(t, slots.Release(ctx, l))
		})
	}
}

func TestModuleRejectsAnUnparsableURL(t *testing.T) {
	t.Parallel()
	app := fx.New(fx.NopLogger, fx.Supply(store.SharedOptions{RedisURL: "redis://127.0.0.1:6379/notadb"}, quiet), store.Module(), fx.Invoke(func(ports.SlotCounter) {}))
	assert.Error(t, app.Err())
}
