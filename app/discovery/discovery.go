// Package discovery wires Kubernetes service discovery (--service-discovery) to the worker
// registry: the pod watcher's desired set (adapters/discovery/kubernetes) becomes
// registrations through registry.Service.SyncDiscovered, so discovered workers are probed,
// detected and drained like any other.
//
// Every replica watches the API server itself (no leader): each sees the same pods, so each
// converges on its own, and discovered workers are kept out of the shared fleet
// (--redis-url) — writing them there would only make N replicas race over one record per pod.
package discovery

import (
	"context"
	"log/slog"
	"time"

	"go.uber.org/fx"
	"k8s.io/client-go/rest"

	"github.com/smg-go/smg/adapters/discovery/kubernetes"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
)

// startWait bounds how long start-up waits for the first pod list; after it the gateway
// starts anyway and the list is applied when it arrives.
const startWait = 10 * time.Second

// Module starts the pod watcher when --service-discovery is set (nothing otherwise): its
// OnStart waits for the first list (at most startWait) and registers the matching pods;
// OnStop ends the watch before the registry closes.
func Module() fx.Option {
	return fx.Module("discovery", fx.Invoke(start))
}

type params struct {
	fx.In
	LC       fx.Lifecycle
	Config   config.Config
	Registry *registry.Service
	Logger   *slog.Logger `optional:"true"`
	// Kube, when provided, is the API server to watch (tests); otherwise the in-cluster
	// config, else $KUBECONFIG or ~/.kube/config.
	Kube *rest.Config `optional:"true"`
	// Metrics records the smg_discovery_* series (smg-spec.md §7.5); nil = none.
	Metrics Recorder `optional:"true"`
}

// Recorder records one discovery sync: the desired set's size, the registrations that
// succeeded and failed, the workers removed, and the time it took.
type Recorder interface {
	Sync(source string, desired, ok, failed, removed int, took time.Duration)
}

func start(p params) error {
	cfg := p.Config
	if !cfg.ServiceDiscovery {
		return nil
	}
	log := p.Logger
	if log == nil {
		log = slog.Default()
	}
	sel := func(v []string) map[string]string {
		m, _ := kubernetes.ParseSelector(config.SelectorPairs(v)) // config.Validate checked them
		return m
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := kubernetes.New(kubernetes.Options{
		Namespace: cfg.ServiceDiscoveryNamespace, Port: cfg.ServiceDiscoveryPort, PD: cfg.PDDisaggregation,
		Prefill: sel(cfg.PrefillSelector), Decode: sel(cfg.DecodeSelector), Encode: sel(cfg.EncodeSelector),
		Regular: sel(cfg.Selector), Logger: log, Config: p.Kube,
	}, func(ts []kubernetes.Target) {
		start := time.Now()
		res, err := p.Registry.SyncDiscovered(ctx, Specs(ts))
		if p.Metrics != nil {
			p.Metrics.Sync("kubernetes", len(ts), res.Registered, res.Failed, res.Removed, time.Since(start))
		}
		if err != nil {
			log.Warn("service discovery: some pods were not registered", "error", err.Error())
		}
	})
	if err != nil {
		cancel()
		return err
	}
	p.LC.Append(fx.Hook{
		OnStart: func(context.Context) error {
			sctx, scancel := context.WithTimeout(ctx, startWait)
			defer scancel()
			if err := w.Start(sctx); err != nil {
				log.Warn("service discovery: starting without the pod list", "error", err.Error())
			}
			return nil
		},
		OnStop: func(context.Context) error {
			w.Stop()
			cancel()
			return nil
		},
	})
	return nil
}

// Specs turns discovered targets into registrations: worker_type from the role, the
// bootstrap port and vLLM connector and engine id from the pod's annotations, and the pod's
// name, UID and namespace as labels (smg.ai/pod-name, smg.ai/pod-uid, smg.ai/namespace), so a
// new pod on a reused IP replaces the old registration.
func Specs(ts []kubernetes.Target) []registry.Spec {
	out := make([]registry.Spec, 0, len(ts))
	for _, t := range ts {
		s := registry.Spec{URL: t.URL, WorkerType: t.Role, KVConnector: t.KVConnector, KVEngineID: t.KVEngineID,
			Labels: map[string]string{kubernetes.LabelPodName: t.PodName, kubernetes.LabelPodUID: t.PodUID, "smg.ai/namespace": t.Namespace}}
		if t.BootstrapPort != nil {
			p := *t.BootstrapPort
			s.BootstrapPort = &p
		}
		out = append(out, s)
	}
	return out
}
