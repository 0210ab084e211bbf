package dispatch

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/engine/httpengine"
	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/app/tenantbudget"
	"github.com/smg-go/smg/app/watchdog"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// Policies builds the prefill and decode leg policies (one instance per leg, seed
// "Per-Phase Policies"). Errors name the flag.
// kv is cache_aware's KV-event view (nil: approximate tree only).
func Policies(cfg config.Config, sticky policy.StickyStore, obs policy.Observer, kv policy.KVPrefixes) (prefill, decode policy.Policy, err error) {
	o := cfg.PolicyOptions()
	o.Sticky, o.Observer, o.KVPrefixes = sticky, obs, kv
	if prefill, err = policy.New(cfg.PrefillPolicyName(), policy.LegPrefill, o); err != nil {
		return nil, nil, fmt.Errorf("--prefill-policy: %w", err)
	}
	if decode, err = policy.New(cfg.DecodePolicyName(), policy.LegDecode, o); err != nil {
		return nil, nil, fmt.Errorf("--decode-policy: %w", err)
	}
	return prefill, decode, nil
}

type moduleIn struct {
	fx.In
	LC        fx.Lifecycle
	Config    config.Config
	Store     ports.WorkerStore
	Registry  *registry.Service
	Sticky    ports.StickyStore
	Admission *admission.Admitter
	Metrics   ports.PDMetrics      `optional:"true"`
	Observer  policy.Observer      `optional:"true"`
	Retries   RetryRecorder        `optional:"true"`
	Outcomes  OutcomeRecorder      `optional:"true"`
	GRPC      GRPCPipeline         `optional:"true"`
	Log       *slog.Logger         `optional:"true"`
	Tracer    trace.TracerProvider `optional:"true"`
	Watchdog  *watchdog.Watchdog   `optional:"true"`
	// KV is the KV-event view (app/kvroute), nil when --kv-events-routing is off.
	KV policy.KVPrefixes `optional:"true"`
	// Tenants authenticates requests and names their tenant (app: --tenants-file); nil:
	// --api-key alone.
	Tenants ports.TenantResolver `optional:"true"`
	// Budgets enforces the tenants' limits (app/tenantbudget); nil: none.
	Budgets *tenantbudget.Budgets `optional:"true"`
}

type moduleOut struct {
	fx.Out
	Dispatcher *Dispatcher
	Selector   *selection.Selector
	// Prober serves POST /workers/probe-pair (adapters/api).
	Prober ports.PairProber
	Routes []ports.Route `group:"routes,flatten"`
}

// Module provides the pair selector (pairing mode and per-leg policies from the config),
// the HTTP engine client, the Dispatcher and its data-plane routes (fx group "routes"). It
// also gives the registry the real pd_pairing key function and runs cache_aware eviction
// every --eviction-interval.
func Module() fx.Option {
	return fx.Module("dispatch", fx.Provide(newModule))
}

func newModule(in moduleIn) (moduleOut, error) {
	log := in.Log
	if log == nil {
		log = slog.Default()
	}
	mode, err := pairing.ParseMode(in.Config.PairingMode)
	if err != nil {
		return moduleOut{}, fmt.Errorf("--pd-pairing-mode: %w", err)
	}
	if in.Config.EPDDisaggregation {
		// EPD keeps all three legs on one runtime (the pipeline checks it) but does not
		// apply --pd-pairing-mode (seed "EPD").
		mode = pairing.ModeOff
	}
	pp, dp, err := Policies(in.Config, in.Sticky, in.Observer, in.KV)
	if err != nil {
		return moduleOut{}, err
	}
	forgetRemovedWorkers(in.Store, pp, dp)
	sel := selection.New(in.Store, mode, pp, dp, log)
	if in.Metrics != nil {
		sel.SetMetrics(in.Metrics)
	}
	in.Registry.SetPairingKey(selection.PairingKey)
	engine := httpengine.New(httpengine.Options{
		ConnectTimeout: in.Config.ConnectTimeout,
		// Leg deadlines are the dispatcher's (per leg and per attempt, blaming the right
		// worker), not the transport's: a non-streaming decode head comes with its answer.
		InjectHeaders: telemetry.InjectHeaders,
	})
	// Every leg gets a prefill/decode span and lands in the request's ports.RequestInfo.
	// The progress watchdog follows every leg (and sends its canaries through the client it
	// wraps, unwatched).
	traced := in.Watchdog.WrapEngine(telemetry.TraceLegs(engine, in.Tracer))
	d := New(Deps{Config: in.Config, Store: in.Store, Selector: sel, Engine: traced, Metrics: in.Metrics,
		Admission: in.Admission, Retries: in.Retries, Outcomes: in.Outcomes, GRPC: in.GRPC, NeedsText: pp.NeedsText() || dp.NeedsText(),
		NeedsTokenIDs: needsTokenIDs(in.KV, pp, dp), Logger: log, Tenants: in.Tenants, Budgets: in.Budgets})

	stop := make(chan struct{})
	in.LC.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go evictLoop(stop, time.Duration(in.Config.EvictionIntervalSecs)*time.Second, pp, dp)
			return nil
		},
		OnStop: func(context.Context) error {
			close(stop)
			engine.CloseIdle()
			return nil
		},
	})
	return moduleOut{Dispatcher: d, Selector: sel, Prober: d, Routes: Guard(d.Routes(), d.tenants, in.Config.RequestIDHeaders)}, nil
}

// needsTokenIDs is Deps.NeedsTokenIDs: with a KV-event view and cache_aware on a leg, true
// while the view has any subscription (when it can tell: an Active method), so fleets
// without gRPC workers never pay for the early tokenization.
func needsTokenIDs(kv policy.KVPrefixes, pp, dp policy.Policy) func() bool {
	if kv == nil || (pp.Name() != wire.PolicyCacheAware && dp.Name() != wire.PolicyCacheAware) {
		return nil
	}
	if a, ok := kv.(interface{ Active() bool }); ok {
		return a.Active
	}
	return func() bool { return true }
}

// forgetRemovedWorkers drops a worker's per-policy state (cache_aware tree tenancy, hash
// rings, bucket and least_load bookkeeping) once it is unregistered. A worker swapped in
// place (registry activation) keeps its URL registered and keeps its state.
func forgetRemovedWorkers(store ports.WorkerStore, ps ...policy.Policy) {
	var rm []policy.WorkerRemover
	for _, p := range ps {
		if r, ok := p.(policy.WorkerRemover); ok {
			rm = append(rm, r)
		}
	}
	if len(rm) == 0 {
		return
	}
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Kind != ports.EventRemoved || ev.Worker == nil {
			return
		}
		if _, err := store.GetByURL(ev.Worker.URL); err == nil {
			return
		}
		for _, r := range rm {
			r.RemoveWorker(ev.Worker.URL)
		}
	})
}

// evictLoop calls Evict on the policies that keep a tree (cache_aware) every interval.
func evictLoop(stop <-chan struct{}, every time.Duration, ps ...policy.Policy) {
	var ev []policy.Evicter
	for _, p := range ps {
		if e, ok := p.(policy.Evicter); ok {
			ev = append(ev, e)
		}
	}
	if len(ev) == 0 || every <= 0 {
		return
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			for _, e := range ev {
				e.Evict()
			}
		}
	}
}
