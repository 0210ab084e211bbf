package breaker

import (
	"sync"
	"time"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Set holds one Breaker per registered worker, keyed by worker ID. It implements
// dispatch.OutcomeRecorder. The registry replaces a worker's *worker.Live when it activates
// (a "removed" then an "added" event with the same ID), so breakers are attached on every
// "added" event and looked up by ID, never by *worker.Live identity.
type Set struct {
	settings Settings
	m        Metrics

	mu    sync.RWMutex
	byID  map[string]*Breaker
	pools map[worker.Role]*pool // one ejection budget per role
}

// NewSet builds an empty Set; m may be nil (no metrics).
func NewSet(s Settings, m Metrics) *Set {
	if m == nil {
		m = nopMetrics{}
	}
	return &Set{settings: s.normalized(), m: m, byID: map[string]*Breaker{}, pools: map[worker.Role]*pool{}}
}

// poolOf returns the ejection budget of role, creating it. Called with mu held.
func (s *Set) poolOf(role worker.Role) *pool {
	p, ok := s.pools[role]
	if !ok {
		p = newPool(s.settings.MaxEjectionPercent)
		s.pools[role] = p
	}
	return p
}

// Attach installs the worker's breaker as its gate, creating a closed one when the worker
// has none yet, and returns it. Called for every "added" store event.
func (s *Set) Attach(l *worker.Live) *Breaker {
	s.mu.Lock()
	b, ok := s.byID[l.ID]
	if !ok || b.worker != l.URL {
		if ok {
			b.pool.leave(b)
			s.m.ForgetCB(b.worker)
		}
		p := s.poolOf(l.Role)
		p.join()
		b = newBreaker(l.URL, s.settings, s.m, p)
		s.byID[l.ID] = b
	}
	s.mu.Unlock()
	l.SetGate(b)
	return b
}

// Forget drops the breaker of a removed worker and its series. A worker re-registered later
// starts with a closed breaker. The series are deleted under the Set's lock, which Record
// holds while it applies an outcome, so a leg result racing the removal cannot bring a
// forgotten worker's series back.
func (s *Set) Forget(l *worker.Live) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.byID[l.ID]; ok {
		delete(s.byID, l.ID)
		b.pool.leave(b)
		s.m.ForgetCB(b.worker)
	}
}

// Get returns the breaker of the worker with id, or nil.
func (s *Set) Get(id string) *Breaker {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.byID[id]
}

// Record classifies one leg result (Classify: status, or 0 with err for a transport
// failure) and applies it to the worker's breaker. Results for a worker that is no longer
// registered are dropped. It implements dispatch.OutcomeRecorder; dispatch calls it once per
// leg it contacted and did not cancel itself.
func (s *Set) Record(l *worker.Live, status int, err error) {
	if l == nil {
		return
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if b := s.byID[l.ID]; b != nil {
		o := Classify(status, err)
		if o == Failure || o == Timeout {
			l.NoteFailure(time.Now())
		}
		b.Record(o)
	}
}

// Eject opens the breaker of l at once (the watchdog's canary confirmed it stalled); see
// Breaker.Eject. It reports whether the breaker is open afterwards (false: no breaker, the
// breakers are disabled, or the role's ejection budget is spent).
func (s *Set) Eject(l *worker.Live) bool {
	if b := s.Get(l.ID); b != nil {
		l.NoteFailure(time.Now())
		return b.Eject()
	}
	return false
}

// ProbeDue reports whether the breaker of l waits for a canary (Breaker.ProbeDue).
func (s *Set) ProbeDue(l *worker.Live) bool {
	b := s.Get(l.ID)
	return b != nil && b.ProbeDue()
}

// Probe applies a canary's result to the breaker of l (Breaker.Probe).
func (s *Set) Probe(l *worker.Live, pass bool) {
	if b := s.Get(l.ID); b != nil {
		if !pass {
			l.NoteFailure(time.Now())
		}
		b.Probe(pass)
	}
}

// Follow attaches a breaker to every worker in store now and on every later "added" event,
// and forgets it on "removed". The callback only touches the Set and the worker's gate, as
// ports.WorkerStore.Subscribe requires.
func (s *Set) Follow(store ports.WorkerStore) {
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Worker == nil {
			return
		}
		switch ev.Kind {
		case ports.EventAdded:
			s.Attach(ev.Worker)
		case ports.EventRemoved:
			s.Forget(ev.Worker)
		}
	})
	for _, l := range store.List() {
		s.Attach(l)
	}
}
