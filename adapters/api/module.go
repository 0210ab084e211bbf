package api

import (
	"log/slog"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
	"go.uber.org/fx"

	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/ports"
)

// Deps is what the operations use. Register only records them; a zero Deps is enough to build
// the OpenAPI document (OpenAPIYAML), but serving requests needs every field.
type Deps struct {
	// Registry serves /workers (and computes pd_pairing via Registry.PairingKey).
	Registry *registry.Service
	// Store is read by /readiness and /v1/models.
	Store ports.WorkerStore
	// PDDisaggregation makes /readiness need a prefill and a decode worker (--pd-disaggregation);
	// without it one healthy worker is enough.
	PDDisaggregation bool
	// EPDDisaggregation makes /readiness need an encode worker too (--epd-disaggregation).
	EPDDisaggregation bool
	// ReadyWithoutWorkers (--ready-without-workers) makes /readiness answer 200 while no
	// worker at all is registered (healthy_workers 0, total_workers 0), so a gateway started
	// empty, to be filled through POST /workers, passes a Kubernetes readiness probe. Once
	// any worker is registered the rule above applies again; draining still answers 503.
	ReadyWithoutWorkers bool
	// Drain, when set, makes /readiness answer 503 "draining" once the shutdown drain
	// started; nil never drains.
	Drain ports.DrainState
	// Auth holds the API keys; zero leaves every route open.
	Auth AuthOptions
	// KV, when set (--kv-events-routing), adds each worker's KV-event state to /workers.
	KV ports.KVStreams
	// Tenants, when set, serves GET /tenants; nil lists none.
	Tenants ports.TenantReporter
	// Prober, when set, serves POST /workers/probe-pair; nil answers 503.
	Prober ports.PairProber
}

// Register adds the operations to h: POST /workers, GET /workers, GET /workers/{id},
// DELETE /workers/{id}, POST /workers/probe-pair, GET /tenants, GET /health, GET /liveness, GET /readiness, GET /v1/models. Call it
// once per API.
func Register(h huma.API, d Deps) {
	declareSecurity(h)
	registerWorkers(h, d)
	registerTenants(h, d)
	registerProbePair(h, d)
	registerHealth(h, d)
	registerInference(h)
	// A POST /workers body is parsed by registry.ParseSpec, not by huma: document it here.
	if op := h.OpenAPI().Paths["/workers"].Post; op != nil {
		op.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
			"application/json": {Schema: h.OpenAPI().Components.Schemas.Schema(reflect.TypeFor[registry.Spec](), true, "WorkerSpec")},
		}}
	}
	// huma's 422 validation errors are answered as 400 (newHumaError); do not document them.
	for _, item := range h.OpenAPI().Paths {
		for _, op := range []*huma.Operation{item.Get, item.Post, item.Put, item.Patch, item.Delete} {
			if op != nil {
				delete(op.Responses, "422")
			}
		}
	}
}

// Options are the gateway settings the API needs; the composition root maps the
// configuration onto them.
type Options struct {
	// Host is the listen address (--host): an open admin API beyond loopback is warned about.
	Host string
	// AdminAPIKey and APIKey are the Bearer keys (--admin-api-key, --api-key); "" = open.
	AdminAPIKey, APIKey string
	// PDDisaggregation and EPDDisaggregation select the readiness rule (see Deps).
	PDDisaggregation, EPDDisaggregation bool
	// ReadyWithoutWorkers is --ready-without-workers (see Deps).
	ReadyWithoutWorkers bool
}

// Module registers the operations on the fx-provided huma.API (built with NewHumaAPI by the
// composition root) with the provided *registry.Service, ports.WorkerStore and Options, and
// the optional ports.DrainState.
func Module() fx.Option {
	return fx.Module("api", fx.Invoke(func(p params) {
		auth := AuthOptions{AdminAPIKey: p.Options.AdminAPIKey, APIKey: p.Options.APIKey, DataAuth: p.Tenants}
		Register(p.API, Deps{Registry: p.Registry, Store: p.Store, Auth: auth, Drain: p.Drain,
			PDDisaggregation: p.Options.PDDisaggregation, EPDDisaggregation: p.Options.EPDDisaggregation,
			ReadyWithoutWorkers: p.Options.ReadyWithoutWorkers, KV: p.KV, Tenants: p.Report, Prober: p.Prober})
		if auth.AdminAPIKey == "" && !IsLoopbackHost(p.Options.Host) {
			log := p.Log
			if log == nil {
				log = slog.Default()
			}
			log.Warn("the worker-management API (POST/GET/DELETE /workers) is open to anyone who can reach this address: set --admin-api-key (or SMG_ADMIN_API_KEY, --admin-api-key-file), or listen on loopback",
				"host", p.Options.Host)
		}
	}))
}

type params struct {
	fx.In
	API      huma.API
	Registry *registry.Service
	Store    ports.WorkerStore
	Options  Options
	Drain    ports.DrainState `optional:"true"`
	Log      *slog.Logger     `optional:"true"`
	// Tenants checks the data-plane key of GET /v1/models (tenants' keys pass too).
	Tenants ports.TenantResolver `optional:"true"`
	KV      ports.KVStreams      `optional:"true"`
	// Report serves GET /tenants.
	Report ports.TenantReporter `optional:"true"`
	// Prober serves POST /workers/probe-pair (app/dispatch).
	Prober ports.PairProber `optional:"true"`
}
