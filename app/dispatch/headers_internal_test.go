package dispatch

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/config"
)

// With --api-key the client's Authorization is the gateway's credential: it never reaches an
// engine. Without it the client's header is forwarded as before.
func TestLegHeadersDropTheGatewaysKey(t *testing.T) {
	t.Parallel()
	in := http.Header{"Authorization": {"Bearer gw-key"}, "Traceparent": {"00-a-b-01"}, "Cookie": {"c=1"}}
	cfg := config.Default()
	open := New(Deps{Config: cfg})
	assert.Equal(t, http.Header{"Authorization": {"Bearer gw-key"}, "Traceparent": {"00-a-b-01"}}, open.legHeaders(in))
	cfg.APIKey = "gw-key"
	guarded := New(Deps{Config: cfg})
	assert.Equal(t, http.Header{"Traceparent": {"00-a-b-01"}}, guarded.legHeaders(in))
}
