package shared_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
)

// Issue "Replicas that share one fleet": Redis loss keeps the last known fleet and
// reconciles when Redis returns. Two replicas on a private redis-server: with Redis killed
// both keep their workers and serve, and a worker posted to A is accepted (locally); Redis
// restarted empty on the same port is written back from the replicas' fleets (no worker is
// drained) and A's registration reaches B.
func TestSharedRegistrySurvivesARedisOutage(t *testing.T) {
	// Not parallel: its gateway processes would add CPU load to the timing-sensitive window
	// tests (a Redis call over 100 ms falls back to per-instance counting).
	t.Cleanup(client.CloseIdleConnections)
	rs := startRedis(t, 0)
	p := prefillSim(t)
	d := decodeSim(t, 0, 0)
	flags := []string{"--redis-url", rs.URL(), "--policy", "round_robin"}
	a := startSMG(t, "A", p, []*sim.Server{d}, flags...)
	b := startSMG(t, "B", p, []*sim.Server{d}, flags...)
	ids := func(g *smg) []string {
		ws, _ := g.workers()
		out := []string{}
		for _, w := range ws {
			out = append(out, w.ID)
		}
		return out
	}
	before := ids(a)
	require.Len(t, before, 2)

	rs.kill()
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	d2 := decodeSim(t, 0, 0)
	id2 := addWorker(t, a, map[string]any{"url": d2.URL(), "worker_type": "decode"})
	time.Sleep(time.Second) // four version polls against a dead Redis
	for _, g := range []*smg{a, b} {
		assert.Subset(t, ids(g), before, "%s keeps its last known fleet", g.name)
		r, err := g.post(ctx, "/generate", generate(fmt.Sprintf("redis down via %s", g.name), 4), nil)
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, r.Status, "%s serves while Redis is down: %s", g.name, r.Body)
	}
	assert.Contains(t, ids(a), id2, "a registration while Redis is down applies locally")

	rs2 := startRedis(t, rs.port) // empty: no persistence
	eventually(t, 10*time.Second, func() bool { return slices.Contains(ids(b), id2) }, "A's registration reaches B after Redis returns")
	assert.Subset(t, ids(a), before, "nothing drained on A")
	assert.Subset(t, ids(b), before, "nothing drained on B")
	c := goredis.NewClient(&goredis.Options{Addr: rs2.addr()})
	defer c.Close()
	n, err := c.HLen(ctx, "smg:{fleet}:workers").Result()
	require.NoError(t, err)
	assert.Equal(t, int64(3), n, "the fleet written back to the empty Redis")
}
