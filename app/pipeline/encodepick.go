package pipeline

import (
	"fmt"
	"sync"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// EncodePicker picks the encode worker of one EPD media item (seed "EPD": each media item
// gets its own encode worker).
type EncodePicker interface {
	// PickEncode returns an available encode worker serving model for the item whose
	// content hash is hash, with one in-flight request accounted on it (release frees it).
	// Errors: 503 no_available_workers for the encode leg.
	PickEncode(model, hash string) (w *worker.Live, release func(), err error)
}

// StoreEncodePicker picks among the store's available encode workers with one
// --encode-policy instance (random, round_robin, or consistent_hashing keyed by the item's
// content hash, so a repeated image goes to the same encode worker while it stays
// available). Select and Acquire run under one lock, as the pair selector's legs do.
type StoreEncodePicker struct {
	store ports.WorkerStore
	pol   policy.Policy
	mu    sync.Mutex
}

// NewStoreEncodePicker builds the picker with policy name on the encode leg; the error is
// domain/policy's for an unknown name or one the encode leg does not accept.
func NewStoreEncodePicker(store ports.WorkerStore, name string, o policy.Options) (*StoreEncodePicker, error) {
	pol, err := policy.New(name, policy.LegEncode, o)
	if err != nil {
		return nil, fmt.Errorf("--encode-policy: %w", err)
	}
	return &StoreEncodePicker{store: store, pol: pol}, nil
}

// Policy is the encode leg's policy instance (its RemoveWorker forgets removed workers).
func (s *StoreEncodePicker) Policy() policy.Policy { return s.pol }

// PickEncode implements EncodePicker.
func (s *StoreEncodePicker) PickEncode(model, hash string) (*worker.Live, func(), error) {
	var cands []*worker.Live
	for _, l := range s.store.List() {
		if l.Role == worker.RoleEncode && l.Runtime == worker.RuntimeTokenSpeed && l.Available() && (model == "" || l.ServesModel(model)) {
			cands = append(cands, l)
		}
	}
	if len(cands) == 0 {
		return nil, nil, errs.NoAvailableWorkers(string(policy.LegEncode))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.pol.Select(cands, &policy.Request{Model: model, RoutingKey: hash})
	if i < 0 || i >= len(cands) {
		return nil, nil, errs.NoAvailableWorkers(string(policy.LegEncode))
	}
	return cands[i], cands[i].Acquire(), nil
}

// forgetRemoved drops pol's per-worker state (consistent_hashing's rings) when a worker is
// unregistered for good.
func forgetRemoved(store ports.WorkerStore, pol policy.Policy) {
	r, ok := pol.(policy.WorkerRemover)
	if !ok {
		return
	}
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Kind != ports.EventRemoved || ev.Worker == nil {
			return
		}
		if _, err := store.GetByURL(ev.Worker.URL); err == nil {
			return
		}
		r.RemoveWorker(ev.Worker.URL)
	})
}
