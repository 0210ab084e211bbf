package metrics_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/metrics"
	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func TestErrorTypeFollowsSMGMapping(t *testing.T) {
	for status, want := range map[int]string{400: "validation_error", 404: "no_workers", 408: "timeout", 504: "timeout",
		500: "backend_error", 502: "backend_error", 503: "backend_error", 401: "internal_error", 429: "internal_error"} {
		assert.Equal(t, want, metrics.ErrorType(status), "status %d", status)
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

var _ net.Error = timeoutErr{}

func TestWorkerErrorsCountOnlyWorkerFaults(t *testing.T) {
	reg := prometheus.NewRegistry()
	red, err := metrics.NewRED(reg, nil)
	require.NoError(t, err)
	dec := worker.NewLive(worker.Worker{ID: "d", URL: "http://127.0.0.1:1", Role: worker.RoleDecode, Mode: worker.ConnHTTP}, worker.StatusReady)
	red.Record(dec, 200, nil)                      // success
	red.Record(dec, 400, nil)                      // the client's fault
	red.Record(dec, 500, nil)                      // backend_error
	red.Record(dec, 429, nil)                      // overloaded
	red.Record(dec, 0, errors.New("conn refused")) // connection_error
	red.Record(dec, 0, timeoutErr{})               // timeout
	red.Record(nil, 500, nil)                      // no worker: ignored
	want := `
# HELP smg_worker_errors_total Engine legs that failed: 5xx, 408 or 429 answers, transport failures and broken bodies.
# TYPE smg_worker_errors_total counter
smg_worker_errors_total{connection_mode="http",error_type="backend_error",worker_type="decode"} 1
smg_worker_errors_total{connection_mode="http",error_type="connection_error",worker_type="decode"} 1
smg_worker_errors_total{connection_mode="http",error_type="overloaded",worker_type="decode"} 1
smg_worker_errors_total{connection_mode="http",error_type="timeout",worker_type="decode"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "smg_worker_errors_total"))
}

func TestPoolSizeAndReadyFollowTheStore(t *testing.T) {
	reg := prometheus.NewRegistry()
	store := memory.NewWorkers()
	_, err := metrics.NewRED(reg, store)
	require.NoError(t, err)
	add := func(id string, role worker.Role, models []string, s worker.Status) {
		require.NoError(t, store.Add(worker.NewLive(worker.Worker{ID: id, URL: "http://127.0.0.1:1/" + id, Role: role,
			Mode: worker.ConnHTTP, Models: models}, s)))
	}
	add("p0", worker.RolePrefill, []string{"m"}, worker.StatusReady)
	add("p1", worker.RolePrefill, []string{"m"}, worker.StatusNotReady)
	add("d0", worker.RoleDecode, nil, worker.StatusNotReady)
	want := `
# HELP smg_worker_pool_size Registered workers by role, transport and model.
# TYPE smg_worker_pool_size gauge
smg_worker_pool_size{connection_mode="http",model="m",worker_type="prefill"} 2
smg_worker_pool_size{connection_mode="http",model="unknown",worker_type="decode"} 1
# HELP smg_workers_ready Ready (healthy) workers by role; 0 for a role with registered workers none of which is ready.
# TYPE smg_workers_ready gauge
smg_workers_ready{worker_type="decode"} 0
smg_workers_ready{worker_type="prefill"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "smg_worker_pool_size", "smg_workers_ready"))
}

func TestConnStateTracksOpenConnections(t *testing.T) {
	reg := prometheus.NewRegistry()
	red, err := metrics.NewRED(reg, nil)
	require.NoError(t, err)
	for _, st := range []http.ConnState{http.StateNew, http.StateNew, http.StateActive, http.StateIdle, http.StateClosed, http.StateNew, http.StateHijacked} {
		red.ConnState(nil, st)
	}
	want := `
# HELP smg_http_connections_active Open client connections on the main listener.
# TYPE smg_http_connections_active gauge
smg_http_connections_active 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "smg_http_connections_active"))
}

// A request served by a gRPC pair is labelled router_type/connection_mode "grpc" on every
// smg_router_* series; one served by an HTTP pair stays "http".
func TestRouterSeriesFollowThePairConnectionMode(t *testing.T) {
	reg := prometheus.NewRegistry()
	red, err := metrics.NewRED(reg, nil)
	require.NoError(t, err)
	serve := func(mode string, status int) {
		h := red.Middleware(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ri := ports.RequestInfoFrom(r.Context())
			ri.SetRequest("m", "chat", false)
			ri.SetConnMode(mode)
			w.WriteHeader(status)
		}))
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		req = req.WithContext(ports.WithRequestInfo(req.Context(), &ports.RequestInfo{}))
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	serve("grpc", 200)
	serve("grpc", 502)
	serve("", 200)
	want := `
# HELP smg_router_requests_total Generation requests routed through a prefill/decode pair.
# TYPE smg_router_requests_total counter
smg_router_requests_total{backend_type="pd",connection_mode="grpc",endpoint="chat",model="m",router_type="grpc",streaming="false"} 2
smg_router_requests_total{backend_type="pd",connection_mode="http",endpoint="chat",model="m",router_type="http",streaming="false"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), "smg_router_requests_total"))
	wantErr := `
# HELP smg_router_request_errors_total Routed requests answered with an error status, by error_type (smg-spec.md §7.4 mapping).
# TYPE smg_router_request_errors_total counter
smg_router_request_errors_total{backend_type="pd",connection_mode="grpc",endpoint="chat",error_type="backend_error",model="m",router_type="grpc"} 1
`
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(wantErr), "smg_router_request_errors_total"))
}
