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
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/smg-go/smg/adapters/httpcapture"
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

type seen struct {
	route  string
	status int
	bytes  int64
	code   string
}

type recordingObserver struct{ got []seen }

func (o *recordingObserver) ObserveResponse(_ *http.Request, s ports.RequestInfoSnapshot, res httpcapture.Result) {
	o.got = append(o.got, seen{route: s.Route, status: res.Status, bytes: res.Bytes, code: res.Header.Get("X-SMG-Error-Code")})
}

// Every observer hears once per request what the access line says, from the one capture;
// a gone client's line says 499 while the observers get the status that was sent; the
// observers hear quiet routes and requests whose line the level drops too.
func TestAccessLogObservers(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	a, b := &recordingObserver{}, &recordingObserver{}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-SMG-Error-Code", "no_workers")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":{}}`))
	})
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("ok"))
		ports.RequestInfoFrom(r.Context()).SetClientGone()
	})
	log := slog.New(slog.NewJSONHandler(&buf, nil)) // info: /health's line is dropped
	h := telemetry.AccessLog(log, a, b)(telemetry.RecordRoute(mux))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/health", nil))

	want := []seen{
		{route: "/v1/chat/completions", status: 503, bytes: 12, code: "no_workers"},
		{route: "/health", status: 200, bytes: 2},
	}
	assert.Equal(t, want, a.got)
	assert.Equal(t, want, b.got)
	var rec map[string]any
	require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), "one line: %s", buf.String())
	assert.Equal(t, 503.0, rec["status"])
	assert.Equal(t, 12.0, rec["bytes"])
	assert.Equal(t, "no_workers", rec["error_code"])
}

// Behind the access log the request-id middleware fills the request-id slot the access
// log left in the context: the handlers, the echoed header and the access line agree.
func TestRequestIDBehindTheAccessLog(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	var inside string
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/completions", func(_ http.ResponseWriter, r *http.Request) {
		inside = telemetry.RequestID(r.Context())
	})
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	h := telemetry.AccessLog(log)(telemetry.NewMiddleware(log, noop.NewTracerProvider())(telemetry.RecordRoute(mux)))
	for _, id := range []string{"rid-one", "rid-two"} {
		buf.Reset()
		req := httptest.NewRequest(http.MethodPost, "/v1/completions", nil)
		req.Header.Set("X-Request-Id", id)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		var rec map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &rec), "one line: %s", buf.String())
		assert.Equal(t, id, inside)
		assert.Equal(t, id, w.Header().Get("X-Request-Id"))
		assert.Equal(t, id, rec["request_id"])
	}
}

// The access line names the tenant an inner layer recorded, and an empty tenant for a
// request without one (the field is always there, as model is, so log queries need no
// existence check).
func TestAccessLineNamesTheTenant(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"", "interactive"} {
		var buf bytes.Buffer
		h := telemetry.AccessLog(slog.New(slog.NewJSONHandler(&buf, nil)))(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if name != "" {
				ports.RequestInfoFrom(r.Context()).SetTenant(name)
			}
			w.WriteHeader(http.StatusOK)
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil))
		var rec map[string]any
		require.NoError(t, json.Unmarshal(buf.Bytes(), &rec))
		assert.Equal(t, name, rec["tenant"])
	}
}
