package kvroute_test

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/kvevents"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/app/kvroute"
	"github.com/smg-go/smg/domain/worker"
)

// replica is one gateway's Router on the shared Redis at url (key prefix p).
func replica(t *testing.T, url string, cluster bool, p string, log io.Writer) *kvroute.Router {
	t.Helper()
	c, err := redis.NewClient(url, cluster, 500*time.Millisecond)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	if log == nil {
		log = io.Discard
	}
	r, err := kvroute.New(kvroute.Options{Dial: func(worker.Worker) (kvevents.KvEventsClient, error) { return unimplemented{}, nil },
		SpeculativeTTL: 10 * time.Second, Subscriber: kvevents.Options{Logger: slog.New(slog.NewTextHandler(log, nil))},
		Shared: redis.NewKVShare(c, redis.KVShareOptions{Options: redis.Options{Prefix: p, OpTimeout: 500 * time.Millisecond}})})
	require.NoError(t, err)
	store := memory.NewWorkers()
	r.Watch(store)
	r.Start()
	t.Cleanup(r.Stop)
	require.NoError(t, store.Add(grpcWorker("grpc://127.0.0.1:21")))
	return r
}

func TestSpeculativeEntriesReachTheOtherReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		url     func(t testing.TB) string
		cluster bool
	}{{"single", redistest.URL, false}, {"cluster", redistest.ClusterURL, true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			u, p := tc.url(t), redistest.Prefix()
			a, b := replica(t, u, tc.cluster, p, nil), replica(t, u, tc.cluster, p, nil)
			prompt := append(block(1), block(100)...)
			time.Sleep(100 * time.Millisecond) // b's listener subscribes
			a.Speculate("grpc://127.0.0.1:21", "m", prompt)
			require.Eventually(t, func() bool { return b.Matched("m", prompt)["grpc://127.0.0.1:21"] == 32 }, 10*time.Second, 5*time.Millisecond)
			st, ok := b.ShareStats()
			require.True(t, ok)
			assert.NotZero(t, st.Received) // twice when the listener caught up from the recent list too
			require.Eventually(t, func() bool { st, _ := a.ShareStats(); return st.Published == 1 }, 10*time.Second, 5*time.Millisecond)
			st, _ = a.ShareStats()
			assert.Zero(t, st.Received, "a replica skips its own entries")
		})
	}
}

func TestRedisLossDegradesToPerReplicaAndRecovers(t *testing.T) {
	t.Parallel()
	proxy := redistest.NewProxy(t)
	p := redistest.Prefix()
	var log syncBuf
	a, b := replica(t, proxy.URL(), false, p, &log), replica(t, proxy.URL(), false, p, nil)
	w := "grpc://127.0.0.1:21"
	time.Sleep(100 * time.Millisecond)

	proxy.Cut()
	lost := block(500)
	a.Speculate(w, "m", lost)
	require.Eventually(t, func() bool { st, _ := a.ShareStats(); return !st.Up }, 10*time.Second, 5*time.Millisecond)
	assert.Contains(t, log.String(), "speculative entries stay per replica")
	assert.Equal(t, 16, a.Matched("m", lost)[w], "the replica keeps its own entry")
	assert.Zero(t, b.Matched("m", lost)[w])

	proxy.Restore()
	back := block(900)
	require.Eventually(t, func() bool {
		a.Speculate(w, "m", back)
		return b.Matched("m", back)[w] == 16
	}, 15*time.Second, 100*time.Millisecond, "sharing resumes once Redis answers")
	st, _ := a.ShareStats()
	assert.True(t, st.Up)
	assert.Contains(t, log.String(), "answers again")
}
