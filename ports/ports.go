// Package ports declares the small interfaces the use cases in app/ consume. Implementations
// live in adapters/. Each interface is shaped by its consumer's needs, not by a library.
package ports

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/worker"
)

// WorkerEvent tells subscribers that the set of workers or a worker's status changed.
type WorkerEvent struct {
	// Kind is "added", "removed" or "status".
	Kind string
	// Worker is the affected worker.
	Worker *worker.Live
}

// WorkerStore is the registry of workers. The in-memory adapter is the default; all methods
// are safe for concurrent use. List and ByRole are called on every request and must not
// allocate more than the returned slice.
type WorkerStore interface {
	// Add registers w. It fails with ErrDuplicateURL when a worker with the same URL exists.
	Add(w *worker.Live) error
	// Remove unregisters the worker with id and returns it; ErrNotFound if unknown.
	Remove(id string) (*worker.Live, error)
	// Replace swaps the registered worker old for nw (same ID and URL) in one step, keeping
	// its place in registration order; subscribers see "removed" then "added". ErrNotFound
	// when old is no longer the registered worker for its ID.
	Replace(old, nw *worker.Live) error
	// Get returns the worker with id; ErrNotFound if unknown.
	Get(id string) (*worker.Live, error)
	// GetByURL returns the worker registered at url; ErrNotFound if unknown.
	GetByURL(url string) (*worker.Live, error)
	// List returns every worker in registration order (a fresh slice).
	List() []*worker.Live
	// ByRole returns the workers of one role in registration order (a shared, read-only
	// snapshot slice: callers must not modify it).
	ByRole(r worker.Role) []*worker.Live
	// Subscribe registers fn to be called after every change (synchronously, in order).
	// Status changes made through SetStatus are reported too.
	Subscribe(fn func(WorkerEvent))
	// SetStatus changes a worker's status and notifies subscribers when it differs.
	SetStatus(l *worker.Live, s worker.Status)
}

// LegRequest is one leg of a PD dispatch as handed to an EngineClient.
type LegRequest struct {
	// Worker receives the leg; the URL is Worker.BaseURL() + Path.
	Worker *worker.Live
	// Path is the engine route, e.g. "/v1/chat/completions".
	Path string
	// Body is the JSON body, already patched with the handoff fields.
	Body []byte
	// Header carries the forwarded client headers (allow-listed) and trace context.
	Header http.Header
	// Leg names the part Worker plays in this request, for the leg span, the access line
	// and TTFT: "prefill", or "decode" (its output reaches the client); "" = the worker's
	// registered role. A prefill or regular worker serving a request alone (selective PD)
	// is the decode leg.
	Leg string
}

// LegResponse is an engine's answer to a leg. The caller must close Body.
type LegResponse struct {
	Status int
	Header http.Header
	Body   io.ReadCloser
}

// EngineClient sends legs to engines. Send returns once the response head arrived (or the
// transport failed); cancelling ctx aborts the leg, including a body still being read.
// A transport error is returned as err with a nil response.
type EngineClient interface {
	Send(ctx context.Context, req LegRequest) (*LegResponse, error)
}

// Clock is the time source, swappable in tests.
type Clock interface {
	Now() time.Time
}

// PDMetrics records the PD series the seed names ("Monitoring"). Labels: model and runtime
// are the request's model and the prefill worker's runtime. Every method must be cheap and
// safe for concurrent use.
type PDMetrics interface {
	// ObserveTTFT records smg_pd_ttft_seconds: prefill dispatch to first decode output.
	ObserveTTFT(model, runtime string, d time.Duration)
	// ObservePrefillDuration records smg_pd_prefill_duration_seconds.
	ObservePrefillDuration(model, runtime string, d time.Duration)
	// IncConnectorMode increments smg_pd_kv_connector_mode_total{mode}.
	IncConnectorMode(mode string)
	// IncKVTransferFailure increments smg_pd_kv_transfer_failures_total.
	IncKVTransferFailure()
	// IncBootstrapFailure increments smg_pd_bootstrap_failures_total.
	IncBootstrapFailure()
	// IncAdmissionWait increments smg_pd_admission_waits_total.
	IncAdmissionWait()
	// IncAdmissionShed increments smg_pd_admission_sheds_total.
	IncAdmissionShed()
	// IncSelection increments smg_worker_selection_total{worker_type,connection_mode,model,policy}.
	IncSelection(workerType, connectionMode, model, policy string)
	// AddActive adds delta to smg_worker_requests_active{worker}.
	AddActive(workerURL string, delta float64)
}
