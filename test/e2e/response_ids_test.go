package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/sim"
)

// The response id carries its route prefix once: the gateway does not forward its own
// minted id (`chatcmpl-…`) as X-Request-Id, which an engine that builds its id as prefix +
// X-Request-Id (vLLM; the simulator likewise) would return as `chatcmpl-chatcmpl-…`. A
// client's own X-Request-Id still reaches the engine as sent, as through SMG.
func TestResponseIDsAreNotDoubled(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{sim.EngineSGLang, sim.EngineVLLM} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			f := sglangFleet(t, 1, 1)
			if engine == sim.EngineVLLM {
				f = vllmFleet(t, sim.ConnectorNixl, 1, 1)
			}
			for _, a := range []api{apiChat, apiCompletions} {
				prefix := map[string]string{"chat": "chatcmpl-", "completions": "cmpl-"}[a.name]
				r := f.Gateway.Post(t, a.path, a.body("whose id", 2, false), nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				id := str(t, r.Object(t), "id")
				assert.True(t, strings.HasPrefix(id, prefix), "%s id %q", a.name, id)
				assert.Equal(t, 1, strings.Count(id, prefix), "%s id %q carries its prefix once", a.name, id)
				assert.NotContains(t, id, r.Header.Get(wire.HeaderRequestID), "%s: the gateway's id is not the engine's", a.name)

				s := f.Gateway.Stream(t, a.path, a.body("whose streamed id", 2, true))
				require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
				require.NotEmpty(t, s.Events)
				sid := str(t, s.Events[0].JSON(t), "id")
				assert.Equal(t, 1, strings.Count(sid, prefix), "%s streamed id %q carries its prefix once", a.name, sid)

				hdr := http.Header{}
				hdr.Set(wire.HeaderRequestID, "client-id-7")
				r = f.Gateway.Post(t, a.path, a.body("my id", 2, false), hdr)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				if engine == sim.EngineVLLM {
					assert.Equal(t, prefix+"client-id-7", str(t, r.Object(t), "id"), "a client's X-Request-Id reaches vLLM as sent")
				}
			}
		})
	}
}
