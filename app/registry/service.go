// Package registry is the worker-registration use case: it validates worker specs (POST
// /workers bodies and the --prefill/--decode/--worker-urls startup workers), adds them to the
// ports.WorkerStore, activates them in the background (first health probe, runtime and model
// detection), and removes them with a drain period (smg-spec.md §3.2, §3.4).
package registry

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// PairingKeyPlaceholder is what PairingKey returns until the pairing use case installs its
// function with SetPairingKey (GET /workers shows it as pd_pairing).
const PairingKeyPlaceholder = "unknown"

// Accepted is the result of a registration accepted for background processing
// (smg-spec.md §3.2 step 4): the new worker's id, its normalized URL, and its location
// "/workers/<id>".
type Accepted struct {
	WorkerID string
	URL      string
	Location string
}

// Service registers, lists and removes workers. All changes to the store go through it, so
// duplicate-URL checks and the replace-after-detection step are serialized. Safe for
// concurrent use.
type Service struct {
	store  ports.WorkerStore
	cfg    config.Config
	client *http.Client
	own    bool
	log    *slog.Logger
	grpc   ports.GRPCEngines // activates grpc:// workers; nil = they stay pending

	pairing atomic.Pointer[func(worker.Worker) string]

	hosts  hostPolicy // --worker-allowed-hosts and the blocked metadata addresses
	probes probeSlots // --registration-probe-concurrency

	mu     sync.Mutex             // serializes registry changes to the store
	jobs   map[string]*activation // the activations in progress, by worker id
	ctx    context.Context
	cancel context.CancelFunc
	closed bool
	wg     sync.WaitGroup

	fleet fleetSync // the shared registry (--redis-url); zero = none

	fileMu sync.Mutex  // serializes workers-file loads; taken before mu
	file   workersFile // --workers-file state
	discMu sync.Mutex  // serializes discovery syncs; taken before mu
	disc   declared    // the workers service discovery registered
	// private holds the ids of workers this replica keeps out of a shared fleet
	// (discovery's); guarded by mu.
	private map[string]bool
	// detected is what each gRPC worker reported at activation or its last refresh
	// (RefreshFacts).
	detected detectedFacts
}

// New builds a Service. client nil = a private client; logger nil = slog.Default().
// Background work (activation probes, drains) runs until Close.
func New(store ports.WorkerStore, cfg config.Config, client *http.Client, logger *slog.Logger) *Service {
	s := &Service{store: store, cfg: cfg, client: client, log: logger, jobs: map[string]*activation{},
		private: map[string]bool{}}
	s.file.set = declared{name: "--workers-file", adopt: true}
	s.disc = declared{name: "service discovery", private: true}
	s.hosts = newHostPolicy(cfg.WorkerAllowedHosts, nil)
	s.probes = make(probeSlots, max(cfg.RegistrationProbes, 1))
	if s.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		s.hosts.guardDialer(tr) // a host name that now resolves to a metadata address is not dialed
		s.client = &http.Client{Transport: tr}
		s.own = true
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s
}

// Module provides *Service and ties it to the fx lifecycle: RegisterStartup on start (it
// returns at once; probing runs in the background) and Close on stop. It needs
// ports.WorkerStore and config.Config; *http.Client and *slog.Logger are used when provided.
func Module() fx.Option {
	return fx.Module("registry",
		fx.Provide(func(p params) *Service {
			return New(p.Store, p.Config, p.Client, p.Logger).WithGRPC(p.GRPC).WithFleet(p.Fleet, FleetOptions{})
		}),
		fx.Invoke(func(lc fx.Lifecycle, s *Service) {
			lc.Append(fx.Hook{OnStart: s.RegisterStartup, OnStop: s.Close})
		}),
	)
}

type params struct {
	fx.In
	Store  ports.WorkerStore
	Config config.Config
	Client *http.Client      `optional:"true"`
	Logger *slog.Logger      `optional:"true"`
	GRPC   ports.GRPCEngines `optional:"true"`
	Fleet  ports.FleetStore  `optional:"true"` // nil: registrations stay per replica
}

// SetPairingKey installs the function that computes a worker's pd_pairing key (the pairing
// use case calls it, e.g. from an fx.Invoke). nil restores the placeholder. Safe to call at
// any time.
func (s *Service) SetPairingKey(f func(worker.Worker) string) {
	if f == nil {
		s.pairing.Store(nil)
		return
	}
	s.pairing.Store(&f)
}

// PairingKey returns w's pd_pairing key, or PairingKeyPlaceholder while none is installed.
func (s *Service) PairingKey(w worker.Worker) string {
	if f := s.pairing.Load(); f != nil {
		return (*f)(w)
	}
	return PairingKeyPlaceholder
}

// Config returns the configuration the service was built with.
func (s *Service) Config() config.Config { return s.cfg }

// Register validates spec, adds the worker to the store as pending and starts its activation
// in the background; it returns without contacting the worker. Errors are *errs.Error in the
// worker-API catalogue: 400 BAD_REQUEST (invalid spec, see Spec.Build; a host that is, or
// resolves to, a link-local or cloud metadata address not in --worker-allowed-hosts, or a
// host that list does not name), 409 WORKER_ALREADY_EXISTS (a worker with this URL is
// registered), 409 WORKER_LIMIT_REACHED (--max-workers are registered), 500
// INTERNAL_SERVER_ERROR (shutting down, store failure).
//
// Activation: an HTTP worker is probed (GET --health-check-endpoint) with growing pauses
// until it answers 2xx, then its runtime, models and metadata labels are detected and it is
// stored again as ready. A worker that never answers stays pending and is left to the health
// checker (which fails it after 10×failure_threshold probes). Workers with health checks
// disabled are made ready without a probe. A grpc:// worker is activated the same way
// through its engine's GetServerInfo/GetModelInfo and HealthCheck RPCs when a gRPC client
// is installed (WithGRPC); a gRPC worker of a runtime whose service the gateway does not
// speak (trtllm, mlx) is made ready with its registered facts, unprobed, and as a prefill or
// decode its PD requests answer 400 runtime_pd_not_supported. ipc:// workers (and gRPC ones without a client) cannot be
// probed here and stay pending.
func (s *Service) Register(ctx context.Context, spec Spec) (Accepted, error) {
	return s.register(ctx, spec, true)
}

// register is Register; resolve false checks only literal addresses against the host policy
// (startup workers: the operator's own flags, whose DNS look-ups must not hold up start-up;
// the registry's client still refuses a blocked address when it dials).
func (s *Service) register(ctx context.Context, spec Spec, resolve bool) (Accepted, error) {
	w, err := s.prepare(ctx, spec, resolve)
	if err != nil {
		return Accepted{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addLocked(ctx, spec, w, uuid.NewString(), true)
}

// prepare validates spec and checks its host against the host policy (see register).
func (s *Service) prepare(ctx context.Context, spec Spec, resolve bool) (worker.Worker, error) {
	w, err := spec.Build()
	if err != nil {
		return w, err
	}
	s.warnNoPD(w)
	if err := refuseEPD(s.cfg.EPDDisaggregation, w); err != nil {
		return w, err
	}
	if err := s.hosts.check(ctx, w, resolve); err != nil {
		return w, err
	}
	return w, nil
}

// addLocked adds the prepared worker w under id as pending and starts its activation. local
// marks a registration made through this replica (admin API, start-up flags, workers file):
// it is subject to --max-workers and, with a shared fleet, published to it first (a URL the
// fleet already holds is refused with 409). A worker taken from the fleet (local false) is
// only added here. Callers hold s.mu.
func (s *Service) addLocked(ctx context.Context, spec Spec, w worker.Worker, id string, local bool) (Accepted, error) {
	w.ID = id
	activatable := w.Mode == worker.ConnHTTP || (w.Mode == worker.ConnGRPC && s.grpc != nil)
	if !activatable && w.Runtime == worker.RuntimeUnspecified {
		w.Runtime = worker.RuntimeSGLang // no detection (smg-spec.md §3.2 step 6)
	}
	healthOff := s.cfg.DisableHealthCheck || w.Health.Disable
	l := worker.NewLive(w, worker.StatusPending)
	if !healthOff && !activatable {
		s.log.Warn("worker cannot be probed over HTTP; it stays pending", "worker", w.DisplayURL(), "worker_type", string(w.Role))
	}
	if s.closed {
		return Accepted{}, errs.New(500, wire.CodeWorkerInternalError, "Worker registry is shutting down")
	}
	if old, err := s.lookupURL(w.URL); err == nil {
		return Accepted{}, alreadyExists(w.DisplayURL(), s.registrationID(old))
	}
	if local {
		if err := s.checkCap(); err != nil {
			return Accepted{}, err
		}
		if err := s.publishLocked(ctx, spec, w); err != nil {
			return Accepted{}, err
		}
	}
	if !activatable && healthOff {
		l.SetStatus(worker.StatusReady)
	}
	if err := s.store.Add(l); err != nil {
		if local {
			s.unpublishLocked(ctx, w.ID)
		}
		if errors.Is(err, ports.ErrDuplicateURL) {
			old, _ := s.store.GetByURL(w.URL)
			id := ""
			if old != nil {
				id = old.ID
			}
			return Accepted{}, alreadyExists(w.DisplayURL(), id)
		}
		return Accepted{}, errs.New(500, wire.CodeWorkerInternalError, "Failed to register worker %s: %v", w.DisplayURL(), err)
	}
	if activatable {
		ctx, cancel := context.WithCancel(s.ctx)
		job := &activation{cancel: cancel}
		s.jobs[w.ID] = job
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			defer cancel() // releases ctx from s.ctx once the activation is over
			defer s.endActivation(l.ID, job)
			s.activate(ctx, l, healthOff)
		}()
	}
	s.log.Info("worker registered", "worker", w.DisplayURL(), "worker_id", w.ID, "worker_type", string(w.Role),
		"runtime_type", string(w.Runtime), "kv_connector", w.KVConnector, "from_fleet", !local)
	return Accepted{WorkerID: w.ID, URL: w.DisplayURL(), Location: "/workers/" + w.ID}, nil
}

func alreadyExists(url, id string) *errs.Error {
	return errs.New(409, wire.CodeWorkerAlreadyExists,
		"Worker already exists at URL '%s' with ID %s. Use DELETE /workers/%s, then POST again, to replace it.", url, id, id)
}

// Get returns the worker with id. Errors: 400 BAD_REQUEST for a non-UUID id, 404
// WORKER_NOT_FOUND for an unknown one (smg-spec.md §3.4). Like List, it waits for a registry
// change in progress, so a worker it no longer finds has had its removal fully applied.
func (s *Service) Get(id string) (*worker.Live, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, errs.New(400, wire.CodeWorkerBadRequest, "Invalid worker_id '%s' (expected UUID). Error: %v", id, err)
	}
	s.settled()
	l, err := s.store.Get(id)
	if err != nil {
		return nil, errs.New(404, wire.CodeWorkerNotFound, "Worker %s not found", id)
	}
	return l, nil
}

// List returns every registered worker in registration order. It waits for a registry
// change in progress: the store drops a worker from its listing before its subscribers
// (breakers, metrics, policies) have seen the removal, so without the wait GET /workers could
// show a worker gone while its smg_worker_cb_state series is still exported.
func (s *Service) List() []*worker.Live {
	s.settled()
	return s.store.List()
}

// settled returns once no registry change (a store Add, Replace or Remove made under s.mu,
// with its subscriber notifications) is in progress. Never call it with s.mu held.
func (s *Service) settled() {
	s.mu.Lock()
	//lint:ignore SA2001 an empty critical section: waiting for the holder is the point
	s.mu.Unlock()
}

// Remove unregisters the worker with id (smg-spec.md §3.4): a ready worker is marked
// draining (not routable) and removed after its drain settle time (health.drain_settle_secs,
// else cfg.DrainSettle); any other worker is removed at once. A pending activation is
// cancelled. With a shared fleet (WithFleet) the registration is deleted from the fleet
// first, so every replica drains the worker the same way. Errors as Get.
func (s *Service) Remove(ctx context.Context, id string) error {
	if _, err := s.Get(id); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	l, err := s.store.Get(id)
	if err != nil {
		return errs.New(404, wire.CodeWorkerNotFound, "Worker %s not found", id)
	}
	s.unpublishLocked(ctx, s.registrationID(l))
	s.removeLocked(l)
	return nil
}

// removeLocked removes l and, for a --dp-aware rank, every other rank of its registration
// (removeOneLocked each). Callers hold s.mu.
func (s *Service) removeLocked(l *worker.Live) {
	for _, x := range s.dpGroup(l) {
		s.removeOneLocked(x)
	}
}

// removeOneLocked cancels l's activation and removes it: at once unless it is ready and has a
// drain settle time, else after marking it draining for that time. Callers hold s.mu.
func (s *Service) removeOneLocked(l *worker.Live) {
	id := l.ID
	if job, ok := s.jobs[id]; ok {
		job.cancel()
		delete(s.jobs, id)
	}
	settle := s.cfg.DrainSettle
	if l.Health.DrainSettle != nil {
		settle = *l.Health.DrainSettle
	}
	if l.Status() != worker.StatusReady || settle <= 0 || s.closed {
		if _, err := s.store.Remove(id); err != nil {
			return
		}
		s.forget(l)
		s.log.Info("worker removed", "worker", l.DisplayURL(), "worker_id", id)
		return
	}
	s.store.SetStatus(l, worker.StatusDraining)
	s.log.Info("worker draining", "worker", l.DisplayURL(), "worker_id", id, "drain_settle", settle.String())
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTimer(settle)
		defer t.Stop()
		select {
		case <-t.C:
		case <-s.ctx.Done():
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if cur, err := s.store.Get(id); err == nil && cur == l {
			_, _ = s.store.Remove(id)
			s.forget(l)
			s.log.Info("worker removed", "worker", l.DisplayURL(), "worker_id", id)
		}
	}()
}

// RegisterStartup registers the workers named on the command line: every --encode and every
// --prefill (with its bootstrap port), every --decode, and every --worker-urls entry as regular. It returns once
// they are in the store (pending); probing runs in the background, so start-up is not
// delayed by slow or absent workers. A URL listed twice is registered once (warning); an
// invalid one gives an error naming the flag (config.Validate normally catches it first).
// With a shared fleet (WithFleet) the whole fleet is taken in first and start-up workers it
// already holds are left as they are; then --workers-file is applied (an unreadable or
// invalid file is an error naming the flag) and watched until Close.
func (s *Service) RegisterStartup(ctx context.Context) error {
	type entry struct {
		flag string
		spec Spec
	}
	var list []entry
	for _, e := range s.cfg.Encode {
		list = append(list, entry{"--encode", Spec{URL: e.URL, WorkerType: string(worker.RoleEncode), BootstrapPort: e.BootstrapPort}})
	}
	for _, p := range s.cfg.Prefill {
		list = append(list, entry{"--prefill", Spec{URL: p.URL, WorkerType: string(worker.RolePrefill), BootstrapPort: p.BootstrapPort}})
	}
	for _, u := range s.cfg.Decode {
		list = append(list, entry{"--decode", Spec{URL: u, WorkerType: string(worker.RoleDecode)}})
	}
	for _, u := range s.cfg.WorkerURLs {
		list = append(list, entry{"--worker-urls", Spec{URL: u, WorkerType: string(worker.RoleRegular)}})
	}
	s.startFleet(ctx)
	var problems []error
	for _, e := range list {
		if s.inFleet(e.spec) {
			continue
		}
		_, err := s.register(ctx, e.spec, false)
		if err == nil {
			continue
		}
		if ee, ok := errs.As(err); ok && ee.Code == wire.CodeWorkerAlreadyExists {
			s.log.Warn("startup worker listed twice; registered once", "flag", e.flag, "worker", worker.RedactURL(e.spec.URL))
			continue
		}
		msg := err.Error()
		if ee, ok := errs.As(err); ok {
			msg = ee.Message
		}
		problems = append(problems, fmt.Errorf("invalid value for %s %s: %s", e.flag, worker.RedactURL(e.spec.URL), msg))
	}
	if err := s.ReloadWorkersFile(ctx); err != nil {
		problems = append(problems, err)
	}
	s.watchWorkersFile()
	return errors.Join(problems...)
}

// Close cancels pending activations, removes draining workers at once, and waits for the
// background work, at most until ctx is done (then it returns ctx's error). Later Register
// calls fail with 500.
func (s *Service) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.cancel()
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if s.own {
		s.client.CloseIdleConnections()
	}
	return nil
}
