package grpcsim_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A canary (request id smg-canary-…) counts in canary_requests, and a leg naming the fake
// bootstrap host is answered alone; POST /sim/fault?kind=hang on the stats port wedges the
// instance while HealthCheck stays healthy, DELETE returns it.
func TestGRPCCanaryAndRuntimeHang(t *testing.T) {
	t.Parallel()
	for _, role := range []string{grpcsim.RolePrefill, grpcsim.RoleDecode} {
		s := start(t, grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role})
		c := sglangpb.NewSglangSchedulerClient(dial(t, s))
		fake := &sglangpb.DisaggregatedParams{BootstrapHost: wire.FakeBootstrapHost, BootstrapRoom: 9}
		r := sgGenerate(ctxT(t, 5*time.Second), c, sgReq(wire.CanaryRequestIDPrefix+"1", prompt(3), 1, false, fake))
		require.NoError(t, r.err, role)
		require.NotNil(t, r.complete, role)
		st := httpStats(t, s)
		assert.Equal(t, []int64{1, 1, 0, 0}, []int64{st.Requests, st.CanaryRequests, st.HandoffsSent + st.HandoffsReceived, st.RecomputedPrompts}, role)

		resp, err := http.Post(s.StatsURL()+"/sim/fault?kind=hang", "", nil)
		require.NoError(t, err)
		_ = resp.Body.Close()
		require.Equal(t, http.StatusNoContent, resp.StatusCode)
		hc, err := c.HealthCheck(ctxT(t, 5*time.Second), &sglangpb.HealthCheckRequest{})
		require.NoError(t, err)
		assert.True(t, hc.GetHealthy(), "health stays OK while wedged")
		r = sgGenerate(ctxT(t, 200*time.Millisecond), c, sgReq("client-1", prompt(3), 1, false, fake))
		require.Error(t, r.err, "%s: a wedged instance answers nothing", role)

		req, _ := http.NewRequest(http.MethodDelete, s.StatsURL()+"/sim/fault", nil)
		resp, err = http.DefaultClient.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		r = sgGenerate(ctxT(t, 5*time.Second), c, sgReq("client-2", prompt(3), 1, false, fake))
		require.NoError(t, r.err, role)
	}
}
