package grpcfleet_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/ports"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// Over gRPC the prefill's prompt tokens leave its token load (worker.Live.TokenLoad, what
// --load-metric tokens and cache_aware's token cost compare) when the prefill leg ends, as
// over HTTP, not when the decode finishes streaming: while the decode streams, the prefill
// holds nothing and the decode still holds the prompt and its expected output.
func TestGRPCPrefillTokensLeaveWithThePrefillLeg(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{grpcsim.EngineVLLM, grpcsim.EngineSGLang} { // sequential, parallel legs
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			var store ports.WorkerStore
			g, p, d := startPD(t, engine, func(role string, c *grpcsim.Config) {
				if role == grpcsim.RoleDecode {
					c.ITL = 100 * time.Millisecond
				}
			}, func(c *config.Config) { c.LoadMetric = "tokens" }, fx.Populate(&store))
			pw, err := store.GetByURL(p.URL())
			require.NoError(t, err)
			dw, err := store.GetByURL(d.URL())
			require.NoError(t, err)

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			resp := g.Open(t, ctx, "/v1/completions", map[string]any{"model": pdModel,
				"prompt": strings.Repeat("tokens held while computing ", 20), "max_tokens": 20, "stream": true})
			defer resp.Body.Close()
			require.Equal(t, http.StatusOK, resp.StatusCode)
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && !strings.HasPrefix(sc.Text(), "data: {") {
			}
			// The first token arrived: the prefill is over, 19 more tokens take ~1.9 s.
			assert.Zero(t, pw.TokenLoad(), "the prefill's tokens were freed when its leg ended")
			assert.Greater(t, dw.TokenLoad(), int64(20), "the decode holds the prompt and its expected output")
			for sc.Scan() {
			}
			assert.Zero(t, dw.TokenLoad())
			assert.Zero(t, pw.Load()+dw.Load(), "no request left in flight")
		})
	}
}
