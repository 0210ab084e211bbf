package redis_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/domain/kvevent"
)

func entry(worker string, from uint32, ttl time.Duration) kvevent.Shared {
	toks := make([]uint32, 32)
	for i := range toks {
		toks[i] = from + uint32(i)
	}
	return kvevent.Shared{Origin: "a", Worker: worker, Model: "m", BlockSize: 16, Tokens: toks, Expires: time.Now().Add(ttl)}
}

func TestKVShareContract(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		c, p := b.client(t)
		o := redis.KVShareOptions{Options: redis.Options{Prefix: p, OpTimeout: 2 * time.Second}, MaxRecent: 3}
		pubSide, subSide := redis.NewKVShare(c, o), redis.NewKVShare(c, o)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()

		var mu sync.Mutex
		var got []kvevent.Shared
		ready := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- subSide.Listen(ctx, func() { close(ready) }, func(e kvevent.Shared) {
				mu.Lock()
				got = append(got, e)
				mu.Unlock()
			})
		}()
		select {
		case <-ready:
		case <-time.After(10 * time.Second):
			t.Fatal("Listen never subscribed")
		}
		for i := range 5 {
			require.NoError(t, pubSide.Publish(ctx, entry("w"+string(rune('0'+i)), uint32(100*i), 10*time.Second)))
		}
		require.Eventually(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 5 }, 10*time.Second, 5*time.Millisecond)
		// Every entry arrives once, intact. Order is not part of the contract: on a cluster a
		// keyless PUBLISH goes to any node and reaches the subscriber's node over the bus, so
		// two publishes may cross (the entries are idempotent, so the order does not matter).
		mu.Lock()
		byWorker := map[string]kvevent.Shared{}
		for _, e := range got {
			byWorker[e.Worker] = e
		}
		mu.Unlock()
		require.Len(t, byWorker, 5)
		for i := range 5 {
			w := "w" + string(rune('0'+i))
			assert.Equal(t, entry(w, uint32(100*i), 0).Tokens, byWorker[w].Tokens, w)
		}

		rec, err := pubSide.Recent(ctx)
		require.NoError(t, err)
		require.Len(t, rec, 3, "the recent list is bounded")
		assert.Equal(t, []string{"w4", "w3", "w2"}, []string{rec[0].Worker, rec[1].Worker, rec[2].Worker}, "newest first")

		// The list's key carries a hash tag (one slot on a cluster) and the entries' TTL.
		keys, err := c.Keys(ctx, p+"*").Result()
		if err == nil && len(keys) > 0 { // on a cluster KEYS answers for one node only
			assert.True(t, strings.Contains(keys[0], "{kvspec}"), keys[0])
		}
		require.NoError(t, pubSide.Publish(ctx, entry("short", 0, 50*time.Millisecond)))
		require.Eventually(t, func() bool {
			n, err := c.Exists(ctx, p+"{kvspec}:recent").Result()
			return err == nil && n == 0
		}, 10*time.Second, 10*time.Millisecond, "the list expires with its newest entry")

		cancel()
		select {
		case err := <-done:
			assert.ErrorIs(t, err, context.Canceled)
		case <-time.After(10 * time.Second):
			t.Fatal("Listen did not return after ctx ended")
		}
	})
}

func TestKVShareRecentSkipsExpiredEntries(t *testing.T) {
	t.Parallel()
	forEachBackend(t, func(t *testing.T, b backend) {
		c, p := b.client(t)
		k := redis.NewKVShare(c, redis.KVShareOptions{Options: redis.Options{Prefix: p, OpTimeout: 2 * time.Second}, TTL: time.Minute})
		ctx := context.Background()
		require.NoError(t, k.Publish(ctx, entry("old", 0, 20*time.Millisecond)))
		require.NoError(t, k.Publish(ctx, entry("new", 0, time.Minute)))
		time.Sleep(30 * time.Millisecond)
		rec, err := k.Recent(ctx)
		require.NoError(t, err)
		require.Len(t, rec, 1)
		assert.Equal(t, "new", rec[0].Worker)
		assert.Error(t, k.Publish(ctx, kvevent.Shared{Worker: "w"}), "no block size")
	})
}
