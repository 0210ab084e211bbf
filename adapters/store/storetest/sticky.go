package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/ports"
)

// StickyTTL is the idle TTL the sticky expiry tests use.
const StickyTTL = time.Second

// RunStickyStore runs the StickyStore contract. mk returns a new, empty store on a
// namespace of its own; the suite calls it once per subtest and runs subtests in parallel.
func RunStickyStore(t *testing.T, mk func(t *testing.T) ports.StickyStore) {
	t.Run("set then get", func(t *testing.T) {
		t.Parallel()
		s, ctx := mk(t), guard(t)
		k := Key("decode:conv 123/ü")
		_, ok, err := s.Get(ctx, k)
		require.NoError(t, err)
		assert.False(t, ok, "unknown key")
		require.NoError(t, s.Set(ctx, k, "http://10.0.0.1:8000@2", time.Hour))
		got, ok, err := s.Get(ctx, k)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "http://10.0.0.1:8000@2", got)
		require.NoError(t, s.Set(ctx, k, "http://[::1]:9000|x", time.Hour))
		got, _, err = s.Get(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, "http://[::1]:9000|x", got, "Set overwrites")
	})
	t.Run("keys are isolated", func(t *testing.T) {
		t.Parallel()
		s, ctx := mk(t), guard(t)
		p, d := Key("prefill:k"), Key("decode:k")
		require.NoError(t, s.Set(ctx, p, "http://127.0.0.1:1", time.Hour))
		require.NoError(t, s.Set(ctx, d, "http://127.0.0.1:2", time.Hour))
		require.NoError(t, s.Delete(ctx, p))
		_, ok, err := s.Get(ctx, p)
		require.NoError(t, err)
		assert.False(t, ok, "deleted")
		got, ok, err := s.Get(ctx, d)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "http://127.0.0.1:2", got)
		require.NoError(t, s.Delete(ctx, Key("never-set")), "deleting an unknown key is not an error")
	})
	t.Run("idle key expires", func(t *testing.T) {
		t.Parallel()
		s, ctx := mk(t), guard(t)
		k := Key("decode:idle")
		require.NoError(t, s.Set(ctx, k, "http://127.0.0.1:1", StickyTTL/4))
		time.Sleep(StickyTTL)
		_, ok, err := s.Get(ctx, k)
		require.NoError(t, err)
		assert.False(t, ok, "key idle for 4 TTLs is gone")
	})
	t.Run("get refreshes the idle expiry", func(t *testing.T) {
		t.Parallel()
		s, ctx := mk(t), guard(t)
		k := Key("decode:busy")
		require.NoError(t, s.Set(ctx, k, "http://127.0.0.1:1", StickyTTL))
		for i := 0; i < 4; i++ { // 2 TTLs in all, each step well inside one TTL
			time.Sleep(StickyTTL / 2)
			got, ok, err := s.Get(ctx, k)
			require.NoError(t, err)
			require.True(t, ok, "read every TTL/2, the key expired after %d reads", i)
			assert.Equal(t, "http://127.0.0.1:1", got)
		}
	})
	t.Run("set refreshes the idle expiry", func(t *testing.T) {
		t.Parallel()
		s, ctx := mk(t), guard(t)
		k := Key("decode:reset")
		for i := 0; i < 4; i++ {
			require.NoError(t, s.Set(ctx, k, "http://127.0.0.1:1", StickyTTL))
			time.Sleep(StickyTTL / 2)
		}
		_, ok, err := s.Get(ctx, k)
		require.NoError(t, err)
		assert.True(t, ok)
	})
	t.Run("zero ttl never expires", func(t *testing.T) {
		t.Parallel()
		s, ctx := mk(t), guard(t)
		k := Key("decode:forever")
		require.NoError(t, s.Set(ctx, k, "http://127.0.0.1:1", 0))
		time.Sleep(StickyTTL / 4)
		got, ok, err := s.Get(ctx, k)
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "http://127.0.0.1:1", got)
		require.NoError(t, s.Delete(ctx, k))
	})
}
