package telemetry_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/ports"
)

// A request whose client left after the status line was sent is logged as the gone client
// (499 client_closed_request); one that ended normally keeps its status and outcome.
func TestAccessLineOfAGoneClient(t *testing.T) {
	t.Parallel()
	for _, gone := range []bool{false, true} {
		var buf bytes.Buffer
		h := telemetry.AccessLog(slog.New(slog.NewJSONHandler(&buf, nil)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write([]byte("data: {}\n\n"))
			if gone {
				ports.RequestInfoFrom(r.Context()).SetClientGone()
			}
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
		if gone {
			assert.Equal(t, 499.0, rec["status"])
			assert.Equal(t, "client_closed_request", rec["outcome"])
			assert.Equal(t, "client_closed_request", rec["error_code"])
		} else {
			assert.Equal(t, 200.0, rec["status"])
			assert.Equal(t, "ok", rec["outcome"])
			assert.Equal(t, "", rec["error_code"])
		}
	}
}
