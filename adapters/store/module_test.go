package store_test

import (
	"context"
	"strings"
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
		cluster   bool
		wantSlots any
	}{
		{"no redis url: in-memory", func(*testing.T) string { return "" }, false, &memory.Slots{}},
		{"redis url: fallback over redis", func(t *testing.T) string { return redistest.URL(t) }, false, &store.FallbackSlots{}},
		{"redis cluster seeds: fallback over the cluster", func(t *testing.T) string { return redistest.ClusterURL(t) }, false, &store.FallbackSlots{}},
		{"one cluster seed and RedisCluster", func(t *testing.T) string {
			u, _, _ := strings.Cut(redistest.ClusterURL(t), ",")
			return u
		}, true, &store.FallbackSlots{}},
		{"redis down at start: fallback, start succeeds", func(t *testing.T) string { return "redis://" + redistest.DeadAddr(t) + "/0" }, false, &store.FallbackSlots{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			var slots ports.SlotCounter
			var sticky ports.StickyStore
			var fleet ports.FleetStore
			app := fxtest.New(t, fx.Supply(store.SharedOptions{RedisURL: c.url(t), RedisCluster: c.cluster}, quiet), store.Module(), fx.Populate(&slots, &sticky, &fleet))
			app.RequireStart()
			defer app.RequireStop()
			assert.IsType(t, c.wantSlots, slots)
			_, inMemory := slots.(*memory.Slots)
			assert.Equal(t, inMemory, fleet == nil, "a shared fleet exactly when Redis is configured")
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			key := redistest.Prefix() + "k"
			require.NoError(t, sticky.Set(ctx, key, "http://127.0.0.1:1", time.Minute))
			if c.cluster || strings.Contains(c.name, "cluster") {
				// Fallback would hide a client that cannot talk to the cluster: the value
				// must really be there, on whichever master serves its slot.
				cc, _ := redistest.ClusterClient(t)
				v, err := cc.Get(ctx, "smg:sticky:"+key).Result()
				require.NoError(t, err)
				assert.Contains(t, v, "http://127.0.0.1:1")
			}
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
