package shared_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim"
)

// Issue #8, Done when: a routing key sent to instance A and then to instance B reaches the
// same decode worker. Both instances run the manual policy on the decode leg over the shared
// Redis sticky store, in front of two decodes. For 16 keys (half first through A, half first
// through B), the second request of a key lands on the decode the first one pinned, and the
// keys spread over both decodes (the pins are not all one worker by accident).
func TestRoutingKeyStickyAcrossInstances(t *testing.T) {
	t.Parallel()
	t.Cleanup(client.CloseIdleConnections)
	rurl := redisDB(t, 9)
	p := prefillSim(t)
	ds := []*sim.Server{decodeSim(t, 0, 0), decodeSim(t, 0, 0)}
	flags := []string{"--redis-url", rurl, "--prefill-policy", "round_robin", "--decode-policy", "manual"}
	a := startSMG(t, "A", p, ds, flags...)
	b := startSMG(t, "B", p, ds, flags...)

	decodeOf := func(g *smg, key string) int {
		t.Helper()
		before := []int64{ds[0].Stats().Requests, ds[1].Stats().Requests}
		r, err := g.post(context.Background(), "/generate", generate("sticky "+key, 2), http.Header{wire.HeaderRoutingKey: {key}})
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
		for i, d := range ds {
			if d.Stats().Requests != before[i] {
				return i
			}
		}
		t.Fatalf("no decode received %s's request", key)
		return -1
	}
	used := map[int]int{}
	for k := range 16 {
		key := fmt.Sprintf("user-%d", k)
		first, second := a, b
		if k%2 == 1 {
			first, second = b, a
		}
		pinned := decodeOf(first, key)
		assert.Equal(t, pinned, decodeOf(second, key), "%s: pinned on %s, followed on %s", key, first.name, second.name)
		used[pinned]++
	}
	assert.Len(t, used, 2, "keys spread over both decodes: %v", used)
}
