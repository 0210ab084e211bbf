package registry

import (
	"strconv"

	"github.com/google/uuid"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// dpSizeLabels are the labels a worker's data-parallel size is read from, in order: SGLang
// and TokenSpeed report dp_size (server_args, /server_info), vLLM's flattened
// GetServerInfoResponse data_parallel_size (grpc.md §1.2; smg-spec.md §3.2 step 5).
var dpSizeLabels = []string{wire.LabelDPSize, "data_parallel_size"}

// dpRanks reports into how many workers --dp-aware expands the detected worker w (one per
// DP rank, smg-spec.md §3.2 steps 5-6): gRPC workers of every runtime and HTTP SGLang
// workers are expanded by their reported dp size (1 when none is reported); other HTTP
// runtimes, ZMQ workers and workers that already are a rank are not (ok false).
func (s *Service) dpRanks(w worker.Worker) (int, bool) {
	if !s.cfg.DPAware || w.DPRank != nil {
		return 0, false
	}
	switch {
	case w.Mode == worker.ConnGRPC:
	case w.Mode == worker.ConnHTTP && w.Runtime == worker.RuntimeSGLang:
	default:
		return 0, false
	}
	for _, k := range dpSizeLabels {
		v, ok := w.Label(k)
		if !ok {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			s.log.Warn("dp size label is not a positive integer; the worker is registered as one rank",
				"worker", w.DisplayURL(), "label", k, "value", v)
			return 1, true
		}
		return n, true
	}
	return 1, true
}

// rankID is the worker id of DP rank r of the registration with id: rank 0 keeps the
// registration's id (the one POST /workers answered), the other ranks get a name-based
// UUID derived from it, so every gateway replica sharing a fleet names them alike.
func rankID(id string, r int) string {
	if r == 0 {
		return id
	}
	ns, err := uuid.Parse(id)
	if err != nil {
		return uuid.NewString()
	}
	return uuid.NewSHA1(ns, []byte("dp-rank/"+strconv.Itoa(r))).String()
}

// expandLocked stores the detected worker as n ready workers in place of the pending
// registration l, one per DP rank r with URL "{base}@{r}", DPRank r and DPSize n
// (smg-spec.md §3.1 dp_rank/dp_size, §2.5.4: legs go to the base URL). Selection, load,
// breakers and health treat each rank as its own worker. Callers hold s.mu and have
// checked that l is current.
func (s *Service) expandLocked(l *worker.Live, detected worker.Worker, n int, engineIDRead bool) {
	if _, err := s.store.Remove(l.ID); err != nil {
		return
	}
	base := detected.URL
	for r := 0; r < n; r++ {
		w := detected
		rank, size := r, n
		w.ID, w.URL, w.DPRank, w.DPSize = rankID(l.ID, r), base+"@"+strconv.Itoa(r), &rank, &size
		nl := worker.NewLive(w, worker.StatusReady)
		nl.SetEngineIDConfirmed(engineIDRead)
		if err := s.store.Add(nl); err != nil {
			s.log.Error("registering a DP rank failed", "worker", nl.DisplayURL(), "worker_id", nl.ID, "error", err.Error())
			continue
		}
	}
	s.log.Info("worker ready as DP ranks", "worker", worker.RedactURL(base), "worker_id", l.ID, "dp_size", n,
		"worker_type", string(detected.Role), "runtime_type", string(detected.Runtime), "models", detected.Models)
	if detected.Runtime == worker.RuntimeSGLang && detected.Mode == worker.ConnGRPC {
		s.log.Warn("--dp-aware pinning has no effect on this worker: SGLang's gRPC servicer ignores data_parallel_rank and its scheduler picks the rank",
			"worker", worker.RedactURL(base), "worker_id", l.ID, "dp_size", n)
	}
}

// lookupURL is the registered worker at url; under --dp-aware a URL expanded into ranks is
// found through its rank 0 ("{url}@0"), so a registration is refused or adopted by the URL
// it was made with.
func (s *Service) lookupURL(url string) (*worker.Live, error) {
	l, err := s.store.GetByURL(url)
	if err != nil && s.cfg.DPAware {
		if r0, err0 := s.store.GetByURL(url + "@0"); err0 == nil && r0.DPRank != nil {
			return r0, nil
		}
	}
	return l, err
}

// registrationID is the id of the registration l belongs to: rank 0's id for a DP rank,
// l's own otherwise (the shared fleet, the workers file and discovery know only that one).
func (s *Service) registrationID(l *worker.Live) string {
	if l.DPRank == nil || *l.DPRank == 0 {
		return l.ID
	}
	if r0, err := s.store.GetByURL(l.BaseURL() + "@0"); err == nil && r0.DPRank != nil {
		return r0.ID
	}
	return l.ID
}

// dpGroup is l and, for a DP rank, every other rank of its registration (same base URL):
// removing one rank removes the registration.
func (s *Service) dpGroup(l *worker.Live) []*worker.Live {
	if l.DPRank == nil {
		return []*worker.Live{l}
	}
	out := []*worker.Live{l}
	base := l.BaseURL()
	for _, x := range s.store.List() {
		if x != l && x.DPRank != nil && x.BaseURL() == base {
			out = append(out, x)
		}
	}
	return out
}
