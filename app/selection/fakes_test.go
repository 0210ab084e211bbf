package selection_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// fakeStore is a minimal ports.WorkerStore: registration order, role snapshots, events
// delivered after the change, outside the lock (as the memory adapter does).
type fakeStore struct {
	mu    sync.Mutex
	order []*worker.Live
	subs  []func(ports.WorkerEvent)
}

var _ ports.WorkerStore = (*fakeStore)(nil)

func (s *fakeStore) Add(w *worker.Live) error {
	s.mu.Lock()
	s.order = append(s.order, w)
	subs := s.subs
	s.mu.Unlock()
	emit(subs, ports.WorkerEvent{Kind: "added", Worker: w})
	return nil
}

func (s *fakeStore) Remove(id string) (*worker.Live, error) {
	s.mu.Lock()
	var gone *worker.Live
	var keep []*worker.Live
	for _, w := range s.order {
		if w.ID == id {
			gone = w
			continue
		}
		keep = append(keep, w)
	}
	s.order = keep
	subs := s.subs
	s.mu.Unlock()
	if gone == nil {
		return nil, ports.ErrNotFound
	}
	emit(subs, ports.WorkerEvent{Kind: "removed", Worker: gone})
	return gone, nil
}

func (s *fakeStore) Replace(old, nw *worker.Live) error {
	s.mu.Lock()
	found := false
	for i, w := range s.order {
		if w == old {
			s.order[i], found = nw, true
		}
	}
	subs := s.subs
	s.mu.Unlock()
	if !found {
		return ports.ErrNotFound
	}
	emit(subs, ports.WorkerEvent{Kind: "removed", Worker: old})
	emit(subs, ports.WorkerEvent{Kind: "added", Worker: nw})
	return nil
}

func (s *fakeStore) Get(id string) (*worker.Live, error) {
	for _, w := range s.List() {
		if w.ID == id {
			return w, nil
		}
	}
	return nil, ports.ErrNotFound
}

func (s *fakeStore) GetByURL(url string) (*worker.Live, error) {
	for _, w := range s.List() {
		if w.URL == url {
			return w, nil
		}
	}
	return nil, ports.ErrNotFound
}

func (s *fakeStore) List() []*worker.Live {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*worker.Live(nil), s.order...)
}

func (s *fakeStore) ByRole(r worker.Role) []*worker.Live {
	var out []*worker.Live
	for _, w := range s.List() {
		if w.Role == r {
			out = append(out, w)
		}
	}
	return out
}

func (s *fakeStore) Subscribe(fn func(ports.WorkerEvent)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subs = append(s.subs, fn)
}

func (s *fakeStore) SetStatus(l *worker.Live, st worker.Status) {
	if l.Status() == st {
		return
	}
	l.SetStatus(st)
	s.mu.Lock()
	subs := s.subs
	s.mu.Unlock()
	emit(subs, ports.WorkerEvent{Kind: "status", Worker: l})
}

func emit(subs []func(ports.WorkerEvent), ev ports.WorkerEvent) {
	for _, fn := range subs {
		fn(ev)
	}
}

// roundRobin is a fake round_robin policy: a rotating counter over the candidates.
type roundRobin struct{ n atomic.Uint64 }

func (*roundRobin) Name() string    { return "round_robin" }
func (*roundRobin) NeedsText() bool { return false }
func (p *roundRobin) Select(c []*worker.Live, _ *policy.Request) int {
	if len(c) == 0 {
		return -1
	}
	return int((p.n.Add(1) - 1) % uint64(len(c)))
}

// leastLoad is a fake least-load policy: the first candidate with the smallest Load.
type leastLoad struct{}

func (leastLoad) Name() string    { return "least_load" }
func (leastLoad) NeedsText() bool { return false }
func (leastLoad) Select(c []*worker.Live, _ *policy.Request) int {
	best := -1
	for i, w := range c {
		if best < 0 || w.Load() < c[best].Load() {
			best = i
		}
	}
	return best
}

// refuse is a policy that never picks.
type refuse struct{}

func (refuse) Name() string                               { return "bucket" }
func (refuse) NeedsText() bool                            { return false }
func (refuse) Select([]*worker.Live, *policy.Request) int { return -1 }

// fakeMetrics records IncSelection calls; the other PDMetrics methods are no-ops.
type fakeMetrics struct {
	mu   sync.Mutex
	sels []string
}

var _ ports.PDMetrics = (*fakeMetrics)(nil)

func (m *fakeMetrics) IncSelection(workerType, connectionMode, model, pol string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sels = append(m.sels, fmt.Sprintf("%s/%s/%s/%s", workerType, connectionMode, model, pol))
}
func (m *fakeMetrics) ObserveTTFT(string, string, time.Duration)            {}
func (m *fakeMetrics) ObservePrefillDuration(string, string, time.Duration) {}
func (m *fakeMetrics) IncConnectorMode(string)                              {}
func (m *fakeMetrics) IncKVTransferFailure()                                {}
func (m *fakeMetrics) IncBootstrapFailure()                                 {}
func (m *fakeMetrics) IncAdmissionWait()                                    {}
func (m *fakeMetrics) IncAdmissionShed()                                    {}
func (m *fakeMetrics) AddActive(string, float64)                            {}

// logSink counts warn records and keeps their messages.
type logSink struct {
	mu   sync.Mutex
	msgs []string
}

func (h *logSink) Enabled(context.Context, slog.Level) bool { return true }
func (h *logSink) Handle(_ context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		h.mu.Lock()
		h.msgs = append(h.msgs, r.Message)
		h.mu.Unlock()
	}
	return nil
}
func (h *logSink) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logSink) WithGroup(string) slog.Handler      { return h }

func (h *logSink) warnings() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.msgs...)
}

// vw builds a ready vLLM worker. connector "" registers none.
func vw(url string, role worker.Role, connector string, labels map[string]string, models ...string) *worker.Live {
	return worker.NewLive(worker.Worker{ID: url, URL: url, Role: role, Runtime: worker.RuntimeVLLM,
		Mode: worker.ConnHTTP, KVConnector: connector, Labels: labels, Models: models}, worker.StatusReady)
}
