package ports

import (
	"context"
	"sync"
	"time"
)

// RequestInfo is what the layers of one client request learn about it, shared by pointer
// through the request context so that the outermost middleware (RED metrics, the access log)
// sees what the inner ones found: the route pattern the mux matched (a copy of the
// *http.Request made further in would hide it), the request and trace ids, the model and
// endpoint the dispatcher parsed, and the workers each attempt used. All methods are safe
// for concurrent use and nil-safe (a nil *RequestInfo records nothing), so a handler served
// without the middleware needs no checks.
type RequestInfo struct {
	// Start is when the outermost middleware received the request (TTFT origin).
	Start time.Time

	mu        sync.Mutex
	route     string
	requestID string
	traceID   string
	spanID    string
	sampled   bool
	model     string
	endpoint  string
	stream    bool
	attempts  int
	prefillID string
	decodeID  string
	runtime   string
	connMode  string
	ttft      time.Duration
	gone      bool
	tenant    string
}

// RequestInfoSnapshot is a consistent copy of a RequestInfo's fields.
type RequestInfoSnapshot struct {
	// Route is the matched ServeMux pattern without the method ("/v1/chat/completions",
	// "/workers/{id}"), "" when no route matched.
	Route     string
	RequestID string
	TraceID   string
	// SpanID is the server span's id (hex, "" without a span); TraceSampled its W3C
	// sampled flag.
	SpanID       string
	TraceSampled bool
	// Model is the request's model field as sent ("" when absent, e.g. /generate).
	Model string
	// Endpoint is the smg_router_* endpoint label (chat, completions, generate, messages,
	// responses, rerank), "" for requests the dispatcher did not serve.
	Endpoint string
	Stream   bool
	// Attempts is the number of pair selections the dispatcher ran (retries included).
	Attempts int
	// PrefillID and DecodeID are the worker ids of the pair the last attempt selected (a
	// sequential decode leg that was never sent is still named).
	PrefillID, DecodeID string
	// Runtime is the last prefill leg's engine runtime (sglang, vllm, ...).
	Runtime string
	// ConnMode is the last pair's connection mode, SMG's connection_mode label ("grpc" for
	// a pair served over gRPC); "" for HTTP pairs and requests no pair served.
	ConnMode string
	// TTFT is request start to the first byte of the decode answer (gRPC: its first output
	// item); 0 if none arrived.
	TTFT time.Duration
	// ClientGone: the client went away before its answer ended (the dispatcher's 499
	// client_closed_request, never written).
	ClientGone bool
	// Tenant is the request's tenant name (domain/tenant), "" without one.
	Tenant string
}

type requestInfoKey struct{}

// WithRequestInfo returns ctx carrying ri.
func WithRequestInfo(ctx context.Context, ri *RequestInfo) context.Context {
	return context.WithValue(ctx, requestInfoKey{}, ri)
}

// RequestInfoFrom returns the RequestInfo in ctx, or nil.
func RequestInfoFrom(ctx context.Context) *RequestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(*RequestInfo)
	return ri
}

// SetIDs records the request id and the trace id (hex, "" without a span).
func (ri *RequestInfo) SetIDs(requestID, traceID string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.requestID, ri.traceID = requestID, traceID
	ri.mu.Unlock()
}

// SetSpan records the server span's id (hex, "" without a span) and sampled flag.
func (ri *RequestInfo) SetSpan(spanID string, sampled bool) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.spanID, ri.sampled = spanID, sampled
	ri.mu.Unlock()
}

// SetRoute records the matched route pattern without its method.
func (ri *RequestInfo) SetRoute(route string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.route = route
	ri.mu.Unlock()
}

// SetRequest records what the dispatcher parsed: the model, the endpoint label, streaming.
func (ri *RequestInfo) SetRequest(model, endpoint string, stream bool) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.model, ri.endpoint, ri.stream = model, endpoint, stream
	ri.mu.Unlock()
}

// AddAttempt counts one pair selection.
func (ri *RequestInfo) AddAttempt() {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.attempts++
	ri.mu.Unlock()
}

// SetLeg records the worker of a leg sent: role "prefill" or "decode" (others are ignored)
// and, for prefill, its runtime.
func (ri *RequestInfo) SetLeg(role, workerID, runtime string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	switch role {
	case "prefill":
		ri.prefillID, ri.runtime = workerID, runtime
	case "decode":
		ri.decodeID = workerID
	}
	ri.mu.Unlock()
}

// SetConnMode records the connection mode of the pair an attempt runs on ("grpc").
func (ri *RequestInfo) SetConnMode(mode string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.connMode = mode
	ri.mu.Unlock()
}

// SetTenant records the request's tenant name, for the access line.
func (ri *RequestInfo) SetTenant(name string) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.tenant = name
	ri.mu.Unlock()
}

// SetClientGone records that the client went away before its answer ended.
func (ri *RequestInfo) SetClientGone() {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	ri.gone = true
	ri.mu.Unlock()
}

// FirstToken records the time to first token once (the first call wins).
func (ri *RequestInfo) FirstToken(d time.Duration) {
	if ri == nil {
		return
	}
	ri.mu.Lock()
	if ri.ttft == 0 {
		ri.ttft = d
	}
	ri.mu.Unlock()
}

// RequestID is the request id recorded by SetIDs, or "".
func (ri *RequestInfo) RequestID() string {
	if ri == nil {
		return ""
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return ri.requestID
}

// Snapshot copies the fields.
func (ri *RequestInfo) Snapshot() RequestInfoSnapshot {
	if ri == nil {
		return RequestInfoSnapshot{}
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return RequestInfoSnapshot{Route: ri.route, RequestID: ri.requestID, TraceID: ri.traceID,
		SpanID: ri.spanID, TraceSampled: ri.sampled, Model: ri.model,
		Endpoint: ri.endpoint, Stream: ri.stream, Attempts: ri.attempts, PrefillID: ri.prefillID,
		DecodeID: ri.decodeID, Runtime: ri.runtime, ConnMode: ri.connMode, TTFT: ri.ttft, ClientGone: ri.gone,
		Tenant: ri.tenant}
}
