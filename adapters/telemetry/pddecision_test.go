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
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/ports"
)

// The selective-PD decision is on the access line when the dispatcher made one, and absent
// otherwise.
func TestAccessLineCarriesThePDDecision(t *testing.T) {
	t.Parallel()
	for _, decided := range []bool{false, true} {
		var buf bytes.Buffer
		h := telemetry.AccessLog(slog.New(slog.NewJSONHandler(&buf, nil)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if decided {
				ports.RequestInfoFrom(r.Context()).SetPDDecision("decode_only", "uncached_below_threshold")
			}
			w.WriteHeader(http.StatusOK)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
		if decided {
			assert.Equal(t, "decode_only", rec["pd_decision"])
			assert.Equal(t, "uncached_below_threshold", rec["pd_decision_reason"])
		} else {
			assert.NotContains(t, rec, "pd_decision")
		}
	}
}

// The server span carries the decision too.
func TestServerSpanCarriesThePDDecision(t *testing.T) {
	t.Parallel()
	sr := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(sr))
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ports.RequestInfoFrom(r.Context()).SetPDDecision("disaggregated", "uncached_above_threshold")
		w.WriteHeader(http.StatusOK)
	})
	h := telemetry.AccessLog(slog.New(slog.DiscardHandler))(telemetry.NewMiddleware(slog.New(slog.DiscardHandler), tp)(inner))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/completions", nil))
	spans := sr.Ended()
	require.Len(t, spans, 1)
	got := map[string]string{}
	for _, a := range spans[0].Attributes() {
		got[string(a.Key)] = a.Value.AsString()
	}
	assert.Equal(t, "disaggregated", got[telemetry.AttrPDDecision])
	assert.Equal(t, "uncached_above_threshold", got[telemetry.AttrPDDecisionReason])
}
