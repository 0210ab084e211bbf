package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
)

// The test cluster really shards: a two-key script on untagged keys of different slots is
// refused with CROSSSLOT, the way the adapters' scripts would be without their hash tags.
func TestClusterRefusesCrossSlotScripts(t *testing.T) {
	t.Parallel()
	c, p := redistest.ClusterClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	a, b := p+"load:w1", p+"meta:w2"
	require.NotEqual(t, c.ClusterKeySlot(ctx, a).Val(), c.ClusterKeySlot(ctx, b).Val())
	err := c.Eval(ctx, "return redis.call('EXISTS', KEYS[1], KEYS[2])", []string{a, b}).Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CROSSSLOT")
}

// Slot keys of many workers spread over every master, and a release on any of them wakes a
// waiter of another instance: the release notice (PUBLISH from a script on the key's
// master) reaches a subscriber connected to whichever node serves the channel.
func TestClusterReleaseWakesAcrossMasters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := backends[1]
	_, prefix := b.client(t)
	a, w := newSlots(t, b, prefix), newSlots(t, b, prefix)
	probe, _ := redistest.ClusterClient(t)

	masters := map[string]bool{}
	for i := 0; i < 24; i++ {
		worker := fmt.Sprintf("http://127.0.0.1:%d/decode", 9000+i)
		l, ok, err := a.Claim(ctx, worker, 1, 1)
		require.NoError(t, err)
		require.True(t, ok)
		masters[masterOf(ctx, t, probe, prefix+"slots:"+worker)] = true

		woke := make(chan error, 1)
		go func() { woke <- w.Wait(ctx, worker) }()
		require.NoError(t, a.Release(ctx, l))
		select {
		case err := <-woke:
			require.NoError(t, err, worker)
		case <-ctx.Done():
			t.Fatalf("release on %s never woke the other instance", worker)
		}
	}
	assert.Len(t, masters, 3, "24 workers' keys must land on all three masters")
}

// masterOf returns the address of the master serving key's slot.
func masterOf(ctx context.Context, t *testing.T, c *goredis.ClusterClient, key string) string {
	t.Helper()
	m, err := c.MasterForKey(ctx, key)
	require.NoError(t, err)
	return m.Options().Addr
}

func TestNewClientKinds(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url     string
		cluster bool
		want    any
		addrs   []string
	}{
		{"redis://127.0.0.1:6379/0", false, &goredis.Client{}, nil},
		{"redis://127.0.0.1:7101", true, &goredis.ClusterClient{}, []string{"127.0.0.1:7101"}},
		{"redis://127.0.0.1:7101,127.0.0.1:7102,h3", false, &goredis.ClusterClient{},
			[]string{"127.0.0.1:7101", "127.0.0.1:7102", "h3:6379"}},
		{"rediss://u:p@h1:7101?addr=h2:7102", false, &goredis.ClusterClient{}, []string{"h1:7101", "h2:7102"}},
		{"redis://h1:7101,h2:7102/0", false, &goredis.ClusterClient{}, []string{"h1:7101", "h2:7102"}},
	} {
		cl, err := redis.NewClient(c.url, c.cluster, 0)
		require.NoError(t, err, c.url)
		assert.IsType(t, c.want, cl, c.url)
		_ = cl.Close()
		if c.addrs != nil {
			o, err := redis.ParseClusterURL(c.url)
			require.NoError(t, err, c.url)
			assert.Equal(t, c.addrs, o.Addrs, c.url)
		}
	}
	for _, bad := range []string{
		"redis://h1:7101,h2:7102/1", "redis://h1:7101,,h2:7102", "redis://h1:7101,h2:7102?db=2",
		"unix:///tmp/redis.sock", "http://h1:7101,h2:7102", "redis://h1:7101,h2:7102?bogus=1",
	} {
		_, err := redis.NewClient(bad, true, 0)
		assert.Error(t, err, bad)
	}
}
