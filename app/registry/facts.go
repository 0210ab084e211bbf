package registry

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// detectedFacts remembers, per worker id, what a gRPC worker reported when it was last
// detected: a refresh only changes the facts that came from the engine, never what the
// operator registered (applyGRPCInfo lets registered values win).
type detectedFacts struct {
	mu sync.Mutex
	m  map[string]ports.GRPCWorkerInfo
}

func (d *detectedFacts) get(id string) (ports.GRPCWorkerInfo, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	info, ok := d.m[id]
	return info, ok
}

func (d *detectedFacts) put(id string, info ports.GRPCWorkerInfo) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.m == nil {
		d.m = map[string]ports.GRPCWorkerInfo{}
	}
	d.m[id] = info
}

func (d *detectedFacts) drop(id string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, id)
}

// RefreshFacts re-reads a ready gRPC worker's server and model info (ports.GRPCEngines.Detect,
// bounded by ctx) and applies what changed. The health checker calls it after each successful
// probe (health.Checker.SetFactsRefresher), so a restarted engine's facts show within one
// health interval; a changed fact is logged at INFO with its old and new value.
//
//   - The KV engine id (vLLM kv_engine_id) replaces the live id (worker.Live.SetEngineID);
//     a failed read leaves it unconfirmed.
//   - The served models and the context-length labels (wire.ContextLengthLabels) that came
//     from the engine, not from the registration, are replaced: the worker is stored anew
//     with them (store.Replace; a fresh breaker and in-flight count, the same id and status).
//     DP ranks keep theirs (their rank workers share one engine).
//
// Workers that are not gRPC, and a registry without a gRPC client, are left alone.
func (s *Service) RefreshFacts(ctx context.Context, l *worker.Live) {
	if s.grpc == nil || l == nil || l.Mode != worker.ConnGRPC {
		return
	}
	info, err := s.grpc.Detect(ctx, l.Worker)
	if err != nil {
		if l.KVConnector != "" {
			l.SetEngineIDConfirmed(false)
		}
		s.log.Warn("re-reading the worker's server and model info failed; retrying on the next probe",
			"worker", l.DisplayURL(), "worker_id", l.ID, "error", err.Error())
		return
	}
	if info.KVEngineID != "" {
		old := l.EngineID()
		if l.SetEngineID(info.KVEngineID) {
			s.log.Info("KV engine id changed", "worker", l.DisplayURL(), "worker_id", l.ID, "from", old, "to", info.KVEngineID)
		}
	} else if l.KVConnector != "" {
		l.SetEngineIDConfirmed(true)
	}
	prev, ok := s.detected.get(l.ID)
	if !ok || l.DPRank != nil {
		return
	}
	nw, changed := refreshedFacts(l.Worker, prev, info)
	if !changed {
		s.detected.put(l.ID, info)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if cur, err := s.store.Get(l.ID); err != nil || cur != l {
		return // removed or replaced meanwhile
	}
	nl := worker.NewLive(nw, l.Status())
	if id := l.EngineID(); id != nw.KVEngineID {
		nl.SetEngineID(id)
	} else {
		nl.SetEngineIDConfirmed(l.EngineIDConfirmed())
	}
	if err := s.store.Replace(l, nl); err != nil {
		s.log.Error("storing the worker's refreshed facts failed", "worker", l.DisplayURL(), "worker_id", l.ID, "error", err.Error())
		return
	}
	s.detected.put(l.ID, info)
	attrs := []any{"worker", l.DisplayURL(), "worker_id", l.ID}
	if !slices.Equal(l.Models, nw.Models) {
		attrs = append(attrs, "models_from", l.Models, "models_to", nw.Models)
	}
	for _, k := range wire.ContextLengthLabels {
		if l.Labels[k] != nw.Labels[k] {
			attrs = append(attrs, k+"_from", l.Labels[k], k+"_to", nw.Labels[k])
		}
	}
	s.log.Info("worker facts changed", attrs...)
}

// refreshedFacts is w with the models and context-length labels of info where w's values
// are still the ones detected before (prev), and whether anything changed.
func refreshedFacts(w worker.Worker, prev, info ports.GRPCWorkerInfo) (worker.Worker, bool) {
	changed := false
	if len(info.Models) > 0 && slices.Equal(w.Models, prev.Models) && !slices.Equal(w.Models, info.Models) {
		w.Models = slices.Clone(info.Models)
		changed = true
	}
	var labels map[string]string
	for _, k := range wire.ContextLengthLabels {
		v, had := w.Labels[k]
		pv, phad := prev.Labels[k]
		nv, nhad := info.Labels[k]
		if v != pv || had != phad || (v == nv && had == nhad) {
			continue // registered by the operator, or unchanged
		}
		if labels == nil {
			labels = maps.Clone(w.Labels)
			if labels == nil {
				labels = map[string]string{}
			}
		}
		if nhad {
			labels[k] = nv
		} else {
			delete(labels, k)
		}
		changed = true
	}
	if labels != nil {
		w.Labels = labels
	}
	return w, changed
}
