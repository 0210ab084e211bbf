package metrics

import (
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/smg-go/smg/adapters/httpcapture"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// RED series under SMG's names (smg-spec.md §7.2, §7.3, §7.5), so SMG's dashboards port.
const (
	NameHTTPRequests          = "smg_http_requests_total"
	NameHTTPRequestDuration   = "smg_http_request_duration_seconds"
	NameHTTPResponses         = "smg_http_responses_total"
	NameHTTPConnectionsActive = "smg_http_connections_active"
	NameRouterRequests        = "smg_router_requests_total"
	NameRouterRequestDuration = "smg_router_request_duration_seconds"
	NameRouterRequestErrors   = "smg_router_request_errors_total"
	NameWorkerErrors          = "smg_worker_errors_total"
	NameWorkerPoolSize        = "smg_worker_pool_size"
	// NameWorkersReady is smg-go's own series (SMG has none): ready workers per role, so an
	// alert can say "no ready prefill" without per-worker joins.
	NameWorkersReady = "smg_workers_ready"

	LabelMethod     = "method"
	LabelPath       = "path"
	LabelStatusCode = "status_code"
	LabelErrorCode  = "error_code"
	LabelRouterType = "router_type"
	LabelEndpoint   = "endpoint"
	LabelStreaming  = "streaming"
	LabelErrorType  = "error_type"

	// PathUnmatched is the path label of requests no route matched (404/405 from the mux):
	// the raw URL never becomes a label.
	PathUnmatched = "unmatched"
	// ModelUnknown is SMG's model label for a request without a model (e.g. /generate).
	ModelUnknown = "unknown"
	// RouterTypeHTTP and ConnModeHTTP (with BackendTypePD) label the smg_router_* series of
	// requests served by an HTTP pair; RouterTypeGRPC (router.go) and ConnModeGRPC those of
	// a gRPC pair (SMG's gRPC router, smg-spec.md §7.2).
	RouterTypeHTTP = "http"
	ConnModeHTTP   = "http"
	ConnModeGRPC   = "grpc"
)

// RED records the HTTP layer, the router layer and the worker-error series. Methods are
// safe for concurrent use.
type RED struct {
	httpRequests  *prometheus.CounterVec
	httpDuration  *prometheus.HistogramVec
	httpResponses *prometheus.CounterVec
	connections   prometheus.Gauge

	routerRequests *prometheus.CounterVec
	routerDuration *prometheus.HistogramVec
	routerErrors   *prometheus.CounterVec
	workerErrors   *prometheus.CounterVec

	modelsMu sync.Mutex
	models   map[string]struct{}
}

// NewRED creates the series and registers them on reg, with smg_worker_pool_size computed
// from store at every scrape when store is not nil.
func NewRED(reg prometheus.Registerer, store ports.WorkerStore) (*RED, error) {
	routerLabels := []string{LabelRouterType, LabelBackendType, LabelConnectionMode, LabelModel, LabelEndpoint}
	r := &RED{
		httpRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameHTTPRequests,
			Help: "HTTP requests received, by method and route pattern."}, []string{LabelMethod, LabelPath}),
		httpDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameHTTPRequestDuration,
			Help: "HTTP request duration in seconds (to the end of the response body or stream), by method and route pattern.", Buckets: DurationBuckets},
			[]string{LabelMethod, LabelPath}),
		httpResponses: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameHTTPResponses,
			Help: "HTTP responses by route pattern, status code and the gateway's error code (X-SMG-Error-Code, empty on success)."},
			[]string{LabelPath, LabelStatusCode, LabelErrorCode}),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: NameHTTPConnectionsActive,
			Help: "Open client connections on the main listener."}),
		routerRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameRouterRequests,
			Help: "Generation requests routed through a prefill/decode pair."}, append(routerLabels[:len(routerLabels):len(routerLabels)], LabelStreaming)),
		routerDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: NameRouterRequestDuration,
			Help: "Routed request duration in seconds, to the end of the answer.", Buckets: DurationBuckets}, routerLabels),
		routerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameRouterRequestErrors,
			Help: "Routed requests answered with an error status, by error_type (smg-spec.md §7.4 mapping)."},
			append(routerLabels[:len(routerLabels):len(routerLabels)], LabelErrorType)),
		workerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Name: NameWorkerErrors,
			Help: "Engine legs that failed: 5xx, 408 or 429 answers, transport failures and broken bodies."},
			[]string{LabelWorkerType, LabelConnectionMode, LabelErrorType}),
		models: map[string]struct{}{},
	}
	cs := []prometheus.Collector{r.httpRequests, r.httpDuration, r.httpResponses, r.connections,
		r.routerRequests, r.routerDuration, r.routerErrors, r.workerErrors}
	if store != nil {
		cs = append(cs, &poolCollector{store: store})
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Middleware records the smg_http_* series and, for requests the dispatcher served (it set
// an endpoint in the request's ports.RequestInfo), the smg_router_* series. The path label
// is the matched route pattern (ports.RequestInfo, filled by the innermost route
// recorder), PathUnmatched when none matched. It must run inside the middleware that puts
// the RequestInfo in the context; without one it records the HTTP series under
// PathUnmatched. The gateway's server does not use it: its access log captures the response
// once and calls ObserveResponse.
func (r *RED) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		start := time.Now()
		cw := httpcapture.New(w)
		next.ServeHTTP(cw, req)
		r.ObserveResponse(req, ports.RequestInfoFrom(req.Context()).Snapshot(), cw.Result(start))
	})
}

// errorCodeHeader is wire.HeaderErrorCode in canonical form: http.Header.Get canonicalizes
// its argument, which allocates for "X-SMG-Error-Code" on every request.
var errorCodeHeader = http.CanonicalHeaderKey(wire.HeaderErrorCode)

// ObserveResponse records one finished request (a telemetry.ResponseObserver, called by the
// access log after the response ended): smg_http_requests_total,
// smg_http_request_duration_seconds and smg_http_responses_total under req's method, the
// route in s (PathUnmatched when none) and res's status and X-SMG-Error-Code, and the
// smg_router_* series when s names a dispatcher endpoint. Duration is res.Duration.
func (r *RED) ObserveResponse(req *http.Request, s ports.RequestInfoSnapshot, res httpcapture.Result) {
	path := s.Route
	if path == "" {
		path = PathUnmatched
	}
	errCode := res.Header.Get(errorCodeHeader)
	status := statusLabel(res.Status)
	r.httpRequests.WithLabelValues(req.Method, path).Inc()
	r.httpDuration.WithLabelValues(req.Method, path).Observe(res.Duration.Seconds())
	r.httpResponses.WithLabelValues(path, status, errCode).Inc()
	if s.Endpoint != "" {
		r.observeRouter(s, res.Status, res.Duration)
	}
}

// statusLabels are the decimal spellings of the HTTP statuses 100–599, made once:
// strconv.Itoa allocates for every number above 99.
var statusLabels = func() (l [500]string) {
	for i := range l {
		l[i] = strconv.Itoa(100 + i)
	}
	return l
}()

// statusLabel is strconv.Itoa(status), without an allocation for a status in 100–599.
func statusLabel(status int) string {
	if status >= 100 && status < 600 {
		return statusLabels[status-100]
	}
	return strconv.Itoa(status)
}

func (r *RED) observeRouter(s ports.RequestInfoSnapshot, status int, d time.Duration) {
	model := r.model(s.Model)
	rt, cm := RouterTypeHTTP, ConnModeHTTP
	if s.ConnMode == ConnModeGRPC {
		rt, cm = RouterTypeGRPC, ConnModeGRPC
	}
	r.routerRequests.WithLabelValues(rt, BackendTypePD, cm, model, s.Endpoint, strconv.FormatBool(s.Stream)).Inc()
	r.routerDuration.WithLabelValues(rt, BackendTypePD, cm, model, s.Endpoint).Observe(d.Seconds())
	if status >= 400 {
		r.routerErrors.WithLabelValues(rt, BackendTypePD, cm, model, s.Endpoint, ErrorType(status)).Inc()
	}
}

// ErrorType maps a status to SMG's error_type label (smg-spec.md §7.4): 400 validation_error,
// 404 no_workers, 408 and 504 timeout, other 5xx backend_error, anything else internal_error.
func ErrorType(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "validation_error"
	case status == http.StatusNotFound:
		return "no_workers"
	case status == http.StatusRequestTimeout || status == http.StatusGatewayTimeout:
		return "timeout"
	case status >= 500:
		return "backend_error"
	}
	return "internal_error"
}

// model caps distinct model labels at MaxModelLabels (then ModelOther); "" is ModelUnknown.
func (r *RED) model(name string) string {
	if name == "" {
		return ModelUnknown
	}
	r.modelsMu.Lock()
	defer r.modelsMu.Unlock()
	if _, ok := r.models[name]; ok {
		return name
	}
	if len(r.models) >= MaxModelLabels {
		return ModelOther
	}
	r.models[name] = struct{}{}
	return name
}

// ConnState is the main listener's http.Server.ConnState hook for smg_http_connections_active.
func (r *RED) ConnState(_ net.Conn, st http.ConnState) {
	switch st {
	case http.StateNew:
		r.connections.Inc()
	case http.StateClosed, http.StateHijacked:
		r.connections.Dec()
	}
}

// Record counts a failed leg in smg_worker_errors_total (a dispatch.OutcomeRecorder, teed
// next to the circuit breakers). status 0 with err is a transport failure or a broken body;
// statuses 5xx, 408 and 429 are worker errors; other statuses (2xx, client 4xx) are not.
func (r *RED) Record(w *worker.Live, status int, err error) {
	if w == nil {
		return
	}
	var et string
	switch {
	case status == 0 && err != nil:
		et = "connection_error"
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			et = "timeout"
		}
	case status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests:
		et = ErrorType(status)
		if status == http.StatusTooManyRequests {
			et = "overloaded"
		}
	default:
		return
	}
	r.workerErrors.WithLabelValues(string(w.Role), string(w.Mode), et).Inc()
}

// poolCollector computes smg_worker_pool_size{worker_type,connection_mode,model} from the
// worker store at scrape time: registered workers per role, transport and served model
// (ModelUnknown for a worker that names no model).
type poolCollector struct{ store ports.WorkerStore }

var poolDesc = prometheus.NewDesc(NameWorkerPoolSize, "Registered workers by role, transport and model.",
	[]string{LabelWorkerType, LabelConnectionMode, LabelModel}, nil)

var readyDesc = prometheus.NewDesc(NameWorkersReady, "Ready (healthy) workers by role; 0 for a role with registered workers none of which is ready.",
	[]string{LabelWorkerType}, nil)

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) { ch <- poolDesc; ch <- readyDesc }

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	type key struct{ role, mode, model string }
	counts := map[key]int{}
	ready := map[string]int{}
	// The gateway is a PD router: both roles are always exported, so "no ready decode" is a
	// 0, not a missing series.
	ready[string(worker.RolePrefill)], ready[string(worker.RoleDecode)] = 0, 0
	for _, w := range c.store.List() {
		if w.Healthy() {
			ready[string(w.Role)]++
		} else if _, ok := ready[string(w.Role)]; !ok {
			ready[string(w.Role)] = 0
		}
		models := w.Models
		if len(models) == 0 {
			models = []string{ModelUnknown}
		}
		for _, m := range models {
			counts[key{string(w.Role), string(w.Mode), m}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(poolDesc, prometheus.GaugeValue, float64(n), k.role, k.mode, k.model)
	}
	for role, n := range ready {
		ch <- prometheus.MustNewConstMetric(readyDesc, prometheus.GaugeValue, float64(n), role)
	}
}
