// Package selection is the pair-selection use case of PD routing: for each request it picks a
// prefill worker and a compatible decode worker with the per-leg policies, accounting the
// in-flight load of both picks (seed "How It Works" step 1, "Per-Phase Policies",
// "Prefill/Decode Pairing", the no_available_workers and no_compatible_pd_pair rows of
// "Error Codes").
package selection

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// warnInterval is the shortest gap between two no_compatible_pd_pair warnings for the same
// fleet (matrix version); a fleet change logs again at once.
const warnInterval = 30 * time.Second

// Selector chooses prefill/decode pairs. It keeps the pairing matrix of the store's prefill
// and decode workers in an atomic pointer: a store event only marks it stale, and the next
// selection (or Matrix call) rebuilds it once, copy-on-write. Rebuilding on the next read
// instead of inside the event callback coalesces bursts (a fleet of N workers registering
// costs one build, not N) and never calls the store from inside its own notification.
// Compatibility is therefore computed once per fleet change, never per request, and so is
// the list of available workers per model (view.go): it is rebuilt on the first selection
// after worker.AvailabilityEpoch moved (a status, stall mark or breaker changed), so a
// selection costs the same for 2 or 4,096 workers.
//
// All methods are safe for concurrent use.
type Selector struct {
	store         ports.WorkerStore
	mode          pairing.Mode
	prefillPolicy policy.Policy
	decodePolicy  policy.Policy
	log           *slog.Logger

	changes atomic.Uint64 // bumped by every store event for a prefill or decode worker
	snap    atomic.Pointer[snapshot]
	buildMu sync.Mutex

	// prefillMu and decodeMu make "policy Select + Acquire" atomic per leg, so concurrent
	// requests see each other's picks in the workers' load.
	prefillMu sync.Mutex
	decodeMu  sync.Mutex

	metrics atomic.Pointer[metricsBox]

	panicAt atomic.Int64 // unix ns of the latest panic-mode warning (warnPanic)

	warnMu      sync.Mutex
	warnVersion uint64
	warnAt      time.Time
	warned      bool
}

type snapshot struct {
	mx      *pairing.Matrix
	version uint64 // value of changes when the store was read

	mu      sync.Mutex // serializes view builds
	views   viewCache  // the available workers per model (view.go)
	retired bool       // replaced by a newer snapshot: views built now are not cached (mu)
}

type metricsBox struct{ m ports.PDMetrics }

// New returns a Selector over store's prefill and decode workers, pairing them under mode,
// with one policy instance per leg (seed "Per-Phase Policies"). It subscribes to store events
// and builds the first matrix at once. A nil logger discards the warnings. prefillPolicy and
// decodePolicy must be non-nil.
func New(store ports.WorkerStore, mode pairing.Mode, prefillPolicy, decodePolicy policy.Policy, logger *slog.Logger) *Selector {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s := &Selector{store: store, mode: mode, prefillPolicy: prefillPolicy,
		decodePolicy: decodePolicy, log: logger}
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Worker != nil && ev.Worker.Role != worker.RolePrefill && ev.Worker.Role != worker.RoleDecode {
			return
		}
		s.changes.Add(1)
	})
	s.Matrix()
	return s
}

// SetMetrics makes the selector record smg_worker_selection_total through m
// (ports.PDMetrics.IncSelection) for every successful pick; nil turns recording off.
func (s *Selector) SetMetrics(m ports.PDMetrics) {
	if m == nil {
		s.metrics.Store(nil)
		return
	}
	s.metrics.Store(&metricsBox{m})
}

// Mode is the pairing mode the selector was built with.
func (s *Selector) Mode() pairing.Mode { return s.mode }

// Matrix returns the current pairing matrix, rebuilding it first when the store changed since
// the last build. The matrix is immutable and may be kept by the caller.
func (s *Selector) Matrix() *pairing.Matrix { return s.current().mx }

// current returns an up-to-date snapshot. Fast path: one atomic load and one comparison.
func (s *Selector) current() *snapshot {
	v := s.changes.Load()
	if sn := s.snap.Load(); sn != nil && sn.version == v {
		return sn
	}
	s.buildMu.Lock()
	defer s.buildMu.Unlock()
	v = s.changes.Load()
	if sn := s.snap.Load(); sn != nil && sn.version == v {
		return sn
	}
	// Read the version before the store: a change racing with the build bumps it again, so
	// the next call rebuilds.
	prefills, decodes := s.store.ByRole(worker.RolePrefill), s.store.ByRole(worker.RoleDecode)
	sn := &snapshot{version: v, mx: pairing.NewMatrix(prefills, decodes, s.mode)}
	sn.views.models = listedModels(prefills, decodes)
	if old := s.snap.Swap(sn); old != nil {
		old.mu.Lock()
		old.views.set.Load().close() // builds on old wait for this; later ones are not shared
		old.retired = true
		old.mu.Unlock()
	}
	return sn
}

// PairingKey is w's `pd_pairing` key for GET /workers (seed "What Is Compared"): the explicit
// pairing protocol when set, otherwise "runtime/transport/layout" with "?" for an unknown
// part; see pairing.Key. It is meaningful for prefill and decode workers only.
func PairingKey(w worker.Worker) string { return pairing.Key(pairing.Describe(w)) }
