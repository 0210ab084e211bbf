package storetest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/ports"
)

// TokenTTL is the table lifetime the token board expiry test publishes with.
const TokenTTL = time.Second

// RunTokenBoard runs the TokenBoard contract. mk returns a new, empty board on a namespace
// of its own; the suite calls it once per subtest and runs subtests in parallel.
func RunTokenBoard(t *testing.T, mk func(t *testing.T) ports.TokenBoard) {
	t.Run("others sum every other instance", func(t *testing.T) {
		t.Parallel()
		b, ctx := mk(t), guard(t)
		w1, w2 := Key("http://10.0.0.1:8000"), Key("http://10.0.0.2:8000")
		require.NoError(t, b.Publish(ctx, "a", map[string]int64{w1: 100, w2: 7}, time.Hour))
		require.NoError(t, b.Publish(ctx, "b", map[string]int64{w1: 30, w2: 0}, time.Hour))
		got, err := b.Others(ctx, "a")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{w1: 30}, got, "b's table; zero entries left out")
		got, err = b.Others(ctx, "b")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{w1: 100, w2: 7}, got)
		got, err = b.Others(ctx, "c")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{w1: 130, w2: 7}, got)
	})
	t.Run("publish replaces the table", func(t *testing.T) {
		t.Parallel()
		b, ctx := mk(t), guard(t)
		w1, w2 := Key("http://10.0.0.1:8000"), Key("http://10.0.0.2:8000")
		require.NoError(t, b.Publish(ctx, "a", map[string]int64{w1: 100, w2: 5}, time.Hour))
		require.NoError(t, b.Publish(ctx, "a", map[string]int64{w2: 9}, time.Hour))
		got, err := b.Others(ctx, "b")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{w2: 9}, got, "a released w1's tokens")
		require.NoError(t, b.Publish(ctx, "a", nil, time.Hour))
		got, err = b.Others(ctx, "b")
		require.NoError(t, err)
		assert.Empty(t, got, "an empty table clears the instance")
	})
	t.Run("a table expires", func(t *testing.T) {
		t.Parallel()
		b, ctx := mk(t), guard(t)
		w := Key("http://10.0.0.1:8000")
		require.NoError(t, b.Publish(ctx, "gone", map[string]int64{w: 50}, TokenTTL))
		require.NoError(t, b.Publish(ctx, "alive", map[string]int64{w: 1}, time.Hour))
		got, err := b.Others(ctx, "me")
		require.NoError(t, err)
		assert.Equal(t, int64(51), got[w])
		time.Sleep(TokenTTL + TokenTTL/2)
		got, err = b.Others(ctx, "me")
		require.NoError(t, err)
		assert.Equal(t, map[string]int64{w: 1}, got, "a crashed instance's load disappears")
	})
	t.Run("bad arguments", func(t *testing.T) {
		t.Parallel()
		b, ctx := mk(t), guard(t)
		require.Error(t, b.Publish(ctx, "", map[string]int64{"w": 1}, time.Hour))
		require.Error(t, b.Publish(ctx, "a", map[string]int64{"w": 1}, 0))
	})
}
