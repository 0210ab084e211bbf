package resilience_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// A response ends when the decode ends: with the prefill's body held back 2 s after its
// head (the KV was already handed off), the client's stream or body — [DONE] and the end
// of the response — arrives long before the prefill body, which is drained in the
// background and its outcome recorded when it ends. (A non-streaming answer whose usage
// carries a cached count waits for the prefill's numbers instead, to report them: the body
// case uses /v1/messages, whose usage has none.)
func TestResponseEndsWithTheDecodeNotThePrefillDrain(t *testing.T) {
	t.Parallel()
	const held = 2 * time.Second
	for _, stream := range []bool{true, false} {
		name := "body"
		if stream {
			name = "stream"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1})
			body := chat("slow prefill body", 4, stream, "prefill:delay-body:2000")
			var elapsed time.Duration
			if stream {
				s := f.Gateway.Stream(t, "/v1/chat/completions", body)
				require.Equal(t, http.StatusOK, s.Status, "%s", s.Body)
				require.NotEmpty(t, s.Events)
				assert.True(t, s.Events[len(s.Events)-1].Done(), "the stream is complete")
				assert.Equal(t, chatText("slow prefill body", 4), chatStreamText(t, s.Events))
				elapsed = s.Elapsed
			} else {
				body["max_tokens"] = 4
				r := f.Gateway.Post(t, "/v1/messages", body, nil)
				require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
				assert.Contains(t, string(r.Body), chatText("slow prefill body", 4))
				elapsed = r.Elapsed
			}
			t.Logf("%s: complete after %v (prefill body held %v)", name, elapsed.Round(time.Millisecond), held)
			assert.Less(t, elapsed, held/2, "the response did not wait for the prefill drain")

			_, ok, fail := cb(t, f.Gateway, f.Prefills[0].URL())
			assert.Equal(t, []float64{0, 0}, []float64{ok, fail}, "the prefill is still draining")
			require.Eventually(t, func() bool {
				_, ok, _ := cb(t, f.Gateway, f.Prefills[0].URL())
				return ok == 1
			}, bound, 20*time.Millisecond, "the prefill's outcome is recorded when its drain ends")
			p := f.Prefills[0].Stats()
			assert.Equal(t, []int64{1, 1, 0}, []int64{p.Requests, p.HandoffsSent, p.Aborted}, "the prefill leg was not cut")
		})
	}
}
