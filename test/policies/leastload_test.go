package policies_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/sim"
)

// Issue #7, Done when: a burst of 256 concurrent requests at 4 idle prefill workers under
// least_load lands 64 ± 4 per worker (sim stats). Selection and in-flight accounting are
// atomic, so the burst sees its own picks; each decode token takes 20 ms, so the requests
// overlap (the bound holds as long as completions are spread evenly, which identical sims
// ensure).
func TestLeastLoadSpreadsABurstEvenly(t *testing.T) {
	t.Parallel()
	const n, prefills = 256, 4
	f := sglangFleet(t, prefills, 2, func(c *config.Config) {
		c.PrefillPolicy, c.DecodePolicy = "least_load", "round_robin"
	}, func(role string, _ int, c *sim.Config) {
		if role == sim.RoleDecode {
			c.ITL = 20 * time.Millisecond
		}
	})
	status := burst(t, f.Gateway, n, func(i int) map[string]any {
		return generate("least load burst request "+strconv.Itoa(i), 16)
	}, nil)
	for i, s := range status {
		assert.Equal(t, http.StatusOK, s, "request %d", i)
	}
	waitIdle(t, f)
	var total int64
	for i, p := range f.Prefills {
		st := p.Stats()
		total += st.Requests
		assert.InDelta(t, n/prefills, st.Requests, 4, "prefill %d got %d of %d", i, st.Requests, n)
		assert.Equal(t, st.Requests, st.HandoffsSent, "prefill %d: every request handed off", i)
	}
	assert.Equal(t, int64(n), total)
}
