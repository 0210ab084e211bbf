package registry

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Defaults of FleetOptions.
const (
	DefaultFleetPoll   = 250 * time.Millisecond
	DefaultFleetResync = 10 * time.Second
)

// FleetOptions tune the shared-registry sync. Zero values select the defaults.
type FleetOptions struct {
	// Poll is how often the fleet's version is read (default 250 ms): a change whose notice
	// was lost is picked up within it.
	Poll time.Duration
	// Resync is how often the whole fleet is listed and reconciled even when the version
	// did not move (default 10 s).
	Resync time.Duration
}

// fleetSync is the Service's view of the shared fleet. Every field is guarded by Service.mu.
type fleetSync struct {
	store   ports.FleetStore
	opts    FleetOptions
	version int64
	down    bool                         // the last fleet call failed
	puts    map[string]ports.FleetRecord // local registrations the fleet has not confirmed
	dels    map[string]struct{}          // local removals the fleet has not confirmed
	known   map[string]ports.FleetRecord // the records of the workers registered here
}

// WithFleet makes the registry share its registrations through f (nil: none, the default)
// and returns s; call it before RegisterStartup. Every registration made through this
// replica (admin API, start-up flags, workers file) is written to the fleet, every removal
// deleted from it, and the replica adds and drains workers as the fleet changes: on a change
// notice, on a version change seen by polling (opts.Poll), and on a full reconcile every
// opts.Resync. Ids are the fleet's, so DELETE /workers/<id> works through any replica.
// Health, detection and status stay per replica: every replica activates and probes each
// worker itself. While the fleet is unreachable the replica keeps its last known workers;
// registrations and removals made meanwhile apply locally and are written when it answers
// again (a URL another replica registered meanwhile keeps the fleet's registration).
func (s *Service) WithFleet(f ports.FleetStore, opts FleetOptions) *Service {
	if f == nil {
		return s
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultFleetPoll
	}
	if opts.Resync <= 0 {
		opts.Resync = DefaultFleetResync
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fleet = fleetSync{store: f, opts: opts, puts: map[string]ports.FleetRecord{}, dels: map[string]struct{}{},
		known: map[string]ports.FleetRecord{}}
	return s
}

// startFleet takes in the whole fleet (bounded by ctx and the adapter's call timeout), so a
// replica starts with every shared worker before it listens, then follows the fleet in the
// background until Close.
func (s *Service) startFleet(ctx context.Context) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet.store == nil || s.closed {
		return
	}
	s.reconcileLocked(ctx)
	notices, stop := s.fleet.store.Watch()
	poll, resync := s.fleet.opts.Poll, s.fleet.opts.Resync
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer stop()
		pt, rt := time.NewTicker(poll), time.NewTicker(resync)
		defer pt.Stop()
		defer rt.Stop()
		for {
			select {
			case <-s.ctx.Done():
				return
			case <-notices:
			case <-rt.C:
			case <-pt.C:
				if !s.fleetMoved() {
					continue
				}
			}
			s.mu.Lock()
			if !s.closed {
				s.reconcileLocked(s.ctx)
			}
			s.mu.Unlock()
		}
	}()
}

// fleetMoved reports whether a reconcile is due: the fleet's version differs from the last
// one reconciled, or local changes wait to be written, or the fleet was unreachable.
func (s *Service) fleetMoved() bool {
	s.mu.Lock()
	pending := s.fleet.down || len(s.fleet.puts) > 0 || len(s.fleet.dels) > 0
	seen := s.fleet.version
	s.mu.Unlock()
	if pending {
		return true
	}
	v, err := s.fleet.store.Version(s.ctx)
	return err != nil || v != seen
}

// inFleet reports whether spec's URL is already registered here with a shared fleet on (a
// start-up worker another replica registered first).
func (s *Service) inFleet(spec Spec) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fleet.store == nil {
		return false
	}
	w, err := spec.Build()
	if err != nil {
		return false
	}
	_, err = s.lookupURL(w.URL)
	return err == nil
}

// publishLocked writes the local registration of w to the fleet. A URL the fleet holds
// under another id is refused with 409 WORKER_ALREADY_EXISTS naming that id; an unreachable
// fleet is not an error (the record is written on a later reconcile). Callers hold s.mu.
func (s *Service) publishLocked(ctx context.Context, spec Spec, w worker.Worker) error {
	f := &s.fleet
	if f.store == nil {
		return nil
	}
	body, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	rec := ports.FleetRecord{ID: w.ID, URL: w.URL, Spec: body}
	if s.private[w.ID] {
		return nil
	}
	existing, err := f.store.Put(ctx, rec)
	switch {
	case err == nil:
	case errors.Is(err, ports.ErrDuplicateURL):
		return alreadyExists(w.DisplayURL(), existing)
	default:
		f.puts[w.ID] = rec
		s.fleetFailed(err)
	}
	f.known[w.ID] = rec
	return nil
}

// unpublishLocked deletes id from the fleet (later, when the fleet is unreachable). Callers
// hold s.mu.
func (s *Service) unpublishLocked(ctx context.Context, id string) {
	f := &s.fleet
	if f.store == nil {
		return
	}
	delete(f.puts, id) // a put that may have landed is undone by the delete
	delete(f.known, id)
	if err := f.store.Delete(ctx, id); err != nil {
		f.dels[id] = struct{}{}
		s.fleetFailed(err)
	}
}

func (s *Service) fleetFailed(err error) {
	if !s.fleet.down {
		s.log.Warn("shared registry unreachable; keeping the last known workers, local changes are written when it answers",
			"error", err.Error())
	}
	s.fleet.down = true
}

// reconcileLocked writes pending local changes, lists the fleet and makes the store match:
// records not registered here are added (pending, activated by this replica), workers the
// fleet no longer holds are removed (draining when ready). An unreachable fleet changes
// nothing. Callers hold s.mu.
func (s *Service) reconcileLocked(ctx context.Context) {
	f := &s.fleet
	for id := range f.dels {
		if err := f.store.Delete(ctx, id); err != nil {
			s.fleetFailed(err)
			return
		}
		delete(f.dels, id)
	}
	for id, rec := range f.puts {
		existing, err := f.store.Put(ctx, rec)
		if errors.Is(err, ports.ErrDuplicateURL) {
			// Registered through another replica meanwhile: the fleet's registration wins.
			if l, gerr := s.store.Get(id); gerr == nil {
				s.log.Warn("worker registered through another replica while the shared registry was unreachable; taking that registration",
					"worker", l.DisplayURL(), "worker_id", id, "fleet_worker_id", existing)
				s.dropLocked(l)
			}
			delete(f.puts, id)
			delete(f.known, id)
			continue
		}
		if err != nil {
			s.fleetFailed(err)
			return
		}
		delete(f.puts, id)
	}
	v, recs, err := f.store.List(ctx)
	if err != nil {
		s.fleetFailed(err)
		return
	}
	if v < f.version {
		// The fleet went back in time: its store lost the records (a Redis restarted without
		// persistence, a flush). Reconciling would drain every worker on every replica, so
		// write back the ones registered here first; other replicas do the same with theirs.
		if v, recs, err = s.reseedLocked(ctx, v); err != nil {
			s.fleetFailed(err)
			return
		}
	}
	if f.down {
		s.log.Info("shared registry reachable again; reconciled", "workers", len(recs))
		f.down = false
	}
	f.version = v
	in := make(map[string]bool, len(recs))
	known := make(map[string]ports.FleetRecord, len(recs)+len(f.puts))
	for id, rec := range f.puts {
		known[id] = rec
	}
	for _, rec := range recs {
		known[rec.ID] = rec
	}
	f.known = known
	for _, rec := range recs {
		in[rec.ID] = true
		if _, err := s.store.Get(rec.ID); err == nil {
			continue
		}
		if l, err := s.lookupURL(rec.URL); err == nil {
			s.dropLocked(l) // a local registration the fleet holds under another id
		}
		spec, err := ParseSpec(rec.Spec)
		if err != nil {
			s.log.Error("shared registry record unreadable; skipped", "worker_id", rec.ID, "error", err.Error())
			continue
		}
		w, err := s.prepare(ctx, spec, false)
		if err != nil {
			s.log.Error("shared registry record refused", "worker_id", rec.ID, "error", err.Error())
			continue
		}
		if _, err := s.addLocked(ctx, spec, w, rec.ID, false); err != nil {
			s.log.Error("shared registry record not added", "worker_id", rec.ID, "error", err.Error())
		}
	}
	for _, l := range s.store.List() {
		if rid := s.registrationID(l); in[rid] || s.private[rid] || l.Status() == worker.StatusDraining {
			continue
		}
		if _, pending := f.puts[l.ID]; pending {
			continue
		}
		s.log.Info("worker removed from the shared registry", "worker", l.DisplayURL(), "worker_id", l.ID)
		s.removeLocked(l)
	}
}

// reseedLocked writes the records of the workers registered here (not draining) back to a
// fleet whose version fell from f.version to v, and lists it again. Callers hold s.mu.
func (s *Service) reseedLocked(ctx context.Context, v int64) (int64, []ports.FleetRecord, error) {
	f := &s.fleet
	n := 0
	for id, rec := range f.known {
		if l, err := s.store.Get(id); err != nil || l.Status() == worker.StatusDraining {
			continue
		}
		if _, err := f.store.Put(ctx, rec); err != nil && !errors.Is(err, ports.ErrDuplicateURL) {
			return 0, nil, err
		}
		n++
	}
	s.log.Warn("shared registry lost its records (version went back); wrote back this replica's workers",
		"version_seen", f.version, "version_now", v, "workers", n)
	return f.store.List(ctx)
}

// dropLocked removes l (with every other rank of a --dp-aware registration) at once,
// without draining. Callers hold s.mu.
func (s *Service) dropLocked(l *worker.Live) {
	for _, l := range s.dpGroup(l) {
		if job, ok := s.jobs[l.ID]; ok {
			job.cancel()
			delete(s.jobs, l.ID)
		}
		if _, err := s.store.Remove(l.ID); err == nil {
			s.forget(l)
		}
	}
}
