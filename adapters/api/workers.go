package api

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/smg-go/smg/adapters/httpauth"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// WorkerInfo is one worker as GET /workers and GET /workers/{id} show it (smg-spec.md §3.4):
// the registration (api_key never included), its live status and load, and its pd_pairing
// key (registry.Service.PairingKey; "unknown" until the pairing use case installs one).
type WorkerInfo struct {
	ID             string               `json:"id" doc:"Gateway-assigned UUID." format:"uuid"`
	URL            string               `json:"url" doc:"Worker URL as registered (trailing '/' removed), with any user:password@ shown as redacted@."`
	ModelID        string               `json:"model_id,omitempty" doc:"Primary model id; absent for a wildcard worker (no models)."`
	Models         []registry.ModelCard `json:"models,omitempty" doc:"Models served; absent = every model."`
	WorkerType     string               `json:"worker_type" enum:"regular,prefill,decode,encode"`
	ConnectionMode string               `json:"connection_mode" enum:"http,grpc,zmq" doc:"Transport, from the URL scheme."`
	RuntimeType    string               `json:"runtime_type" enum:"unspecified,sglang,vllm,trtllm,mlx,tokenspeed,generic,external" doc:"Engine, as registered or detected."`
	Labels         map[string]string    `json:"labels,omitempty" doc:"Labels: registered ones over discovered engine metadata."`
	BootstrapPort  *int                 `json:"bootstrap_port,omitempty" doc:"Bootstrap server port of a prefill worker."`
	KVConnector    string               `json:"kv_connector,omitempty" doc:"vLLM KV connector, e.g. NixlConnector."`
	KVRole         string               `json:"kv_role,omitempty" doc:"vLLM kv_role."`
	KVEngineID     string               `json:"kv_engine_id,omitempty" doc:"vLLM KV engine id."`
	DPBaseURL      string               `json:"dp_base_url,omitempty" doc:"For a --dp-aware rank: the registered URL without the @rank suffix (credentials redacted)."`
	DPRank         *int                 `json:"dp_rank,omitempty" doc:"For a --dp-aware rank: its data-parallel rank (url is {dp_base_url}@{dp_rank})."`
	DPSize         *int                 `json:"dp_size,omitempty" doc:"For a --dp-aware rank: the data-parallel size the worker reported."`
	Priority       int                  `json:"priority" doc:"Stored and displayed, not used for routing."`
	Cost           float64              `json:"cost" doc:"Stored and displayed, not used for routing."`
	IsHealthy      bool                 `json:"is_healthy" doc:"status == ready."`
	Status         string               `json:"status" enum:"pending,ready,not_ready,failed,draining" doc:"Lifecycle status; only ready is routable."`
	Load           int64                `json:"load" doc:"Requests the gateway has in flight on this worker."`
	Queued         int64                `json:"queued,omitempty" doc:"Absent when 0. Requests this gateway replica holds in its flow-control queue for this decode worker's admission window (full window; other replicas queue their own)."`
	PDPairing      string               `json:"pd_pairing" doc:"Prefill/decode pairing key (seed 'Prefill/Decode Pairing'); 'unknown' until pairing is computed."`
	KVEvents       *KVEventsInfo        `json:"kv_events,omitempty"` // present with --kv-events-routing
}

// WorkerStats counts the listed workers by role; encode workers count only in total.
type WorkerStats struct {
	PrefillCount int `json:"prefill_count"`
	DecodeCount  int `json:"decode_count"`
	RegularCount int `json:"regular_count"`
}

// WorkerList is the GET /workers body.
type WorkerList struct {
	Workers []WorkerInfo `json:"workers" nullable:"false"`
	Total   int          `json:"total" doc:"Number of workers listed."`
	Stats   WorkerStats  `json:"stats"`
}

// AddAccepted is the POST /workers 202 body (smg-spec.md §3.2 step 4).
type AddAccepted struct {
	Status   string `json:"status" enum:"accepted"`
	WorkerID string `json:"worker_id" format:"uuid"`
	URL      string `json:"url"`
	Location string `json:"location" example:"/workers/6f1c0a54-2b7e-4c8e-9d55-0c2f0e0f6a11"`
	Message  string `json:"message" example:"Worker addition queued for background processing"`
}

// RemoveAccepted is the DELETE /workers/{id} 202 body (smg-spec.md §3.4).
type RemoveAccepted struct {
	Status   string `json:"status" enum:"accepted"`
	WorkerID string `json:"worker_id" format:"uuid"`
	Message  string `json:"message" example:"Worker removal queued for background processing"`
}

type addWorkerInput struct {
	RawBody []byte `contentType:"application/json"`
}

type addWorkerOutput struct {
	Location string `header:"Location" doc:"The new worker's path, /workers/{id}."`
	Body     AddAccepted
}

type listWorkersInput struct {
	Model string `query:"model" doc:"Only workers that serve this model id (wildcard workers always match)."`
}

type listWorkersOutput struct {
	Body WorkerList
}

type workerIDInput struct {
	ID string `path:"id" doc:"Worker UUID."`
}

type getWorkerOutput struct {
	Body WorkerInfo
}

type removeWorkerOutput struct {
	Body RemoveAccepted
}

const (
	tagWorkers = "workers"
	// maxSpecBytes bounds a POST /workers body (413 above it); specReadTimeout bounds reading it.
	maxSpecBytes    = 1 << 20
	specReadTimeout = 10 * time.Second
)

func registerWorkers(h huma.API, d Deps) {
	// Every worker-management route requires --admin-api-key when it is set.
	admin := huma.Middlewares{requireKey(h, httpauth.NewKey(d.Auth.AdminAPIKey), "admin API key (--admin-api-key)")}
	adminSec := security(SchemeAdmin)
	huma.Register(h, huma.Operation{
		OperationID:   "add-worker",
		Middlewares:   admin,
		Security:      adminSec,
		Method:        http.MethodPost,
		Path:          "/workers",
		Summary:       "Register a worker",
		Description:   "Validates the worker spec, adds the worker as pending and answers 202 at once. In the background the worker is probed (GET --health-check-endpoint) until it answers, its runtime, models and metadata are detected, and it becomes ready. The seed's bodies are accepted verbatim; top-level kv_connector, kv_role, kv_engine_id and bootstrap_port are honoured. Refused with 400 when the URL's host is, or resolves to, a link-local or cloud metadata address (169.254.0.0/16, fe80::/10, fd00:ec2::254) that --worker-allowed-hosts does not list, or a host outside that list when it is set; 409 WORKER_LIMIT_REACHED while --max-workers workers are registered.",
		Tags:          []string{tagWorkers},
		DefaultStatus: http.StatusAccepted,
		Errors:        []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict},
		// The body is parsed and validated by registry.ParseSpec and Spec.Build, so that every
		// problem gets the worker-API message; huma only reads the bytes.
		SkipValidateBody: true,
		MaxBodyBytes:     maxSpecBytes,
		BodyReadTimeout:  specReadTimeout,
	}, func(ctx context.Context, in *addWorkerInput) (*addWorkerOutput, error) {
		spec, err := registry.ParseSpec(in.RawBody)
		if err != nil {
			return nil, toErrorBody(err)
		}
		acc, err := d.Registry.Register(ctx, spec)
		if err != nil {
			return nil, toErrorBody(err)
		}
		return &addWorkerOutput{Location: acc.Location, Body: AddAccepted{
			Status: "accepted", WorkerID: acc.WorkerID, URL: acc.URL, Location: acc.Location,
			Message: "Worker addition queued for background processing",
		}}, nil
	})

	huma.Register(h, huma.Operation{
		OperationID: "list-workers",
		Middlewares: admin,
		Security:    adminSec,
		Method:      http.MethodGet,
		Path:        "/workers",
		Summary:     "List workers",
		Description: "Every registered worker in registration order, with status, load and pd_pairing key.",
		Tags:        []string{tagWorkers},
		Errors:      []int{http.StatusUnauthorized},
	}, func(_ context.Context, in *listWorkersInput) (*listWorkersOutput, error) {
		out := &listWorkersOutput{Body: WorkerList{Workers: []WorkerInfo{}}}
		for _, l := range d.Registry.List() {
			if in.Model != "" && !l.ServesModel(in.Model) {
				continue
			}
			out.Body.Workers = append(out.Body.Workers, info(d.Registry, l, d.KV))
			switch l.Role {
			case worker.RolePrefill:
				out.Body.Stats.PrefillCount++
			case worker.RoleDecode:
				out.Body.Stats.DecodeCount++
			case worker.RoleRegular:
				out.Body.Stats.RegularCount++
			}
		}
		out.Body.Total = len(out.Body.Workers)
		return out, nil
	})

	huma.Register(h, huma.Operation{
		OperationID: "get-worker",
		Middlewares: admin,
		Security:    adminSec,
		Method:      http.MethodGet,
		Path:        "/workers/{id}",
		Summary:     "Get a worker",
		Description: "One registered worker by the id POST /workers answered (its Location header): status, load, models, metadata and pd_pairing key, as in the GET /workers list.",
		Tags:        []string{tagWorkers},
		Errors:      []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound},
	}, func(_ context.Context, in *workerIDInput) (*getWorkerOutput, error) {
		l, err := d.Registry.Get(in.ID)
		if err != nil {
			return nil, toErrorBody(err)
		}
		return &getWorkerOutput{Body: info(d.Registry, l, d.KV)}, nil
	})

	huma.Register(h, huma.Operation{
		OperationID:   "remove-worker",
		Middlewares:   admin,
		Security:      adminSec,
		Method:        http.MethodDelete,
		Path:          "/workers/{id}",
		Summary:       "Remove a worker",
		Description:   "A ready worker is marked draining (no new requests) and removed after its drain settle time (--drain-settle-secs, default 5 s); any other worker is removed at once.",
		Tags:          []string{tagWorkers},
		DefaultStatus: http.StatusAccepted,
		Errors:        []int{http.StatusBadRequest, http.StatusUnauthorized, http.StatusNotFound},
	}, func(ctx context.Context, in *workerIDInput) (*removeWorkerOutput, error) {
		if err := d.Registry.Remove(ctx, in.ID); err != nil {
			return nil, toErrorBody(err)
		}
		return &removeWorkerOutput{Body: RemoveAccepted{
			Status: "accepted", WorkerID: in.ID, Message: "Worker removal queued for background processing",
		}}, nil
	})
}

// info renders l as WorkerInfo.
func info(r *registry.Service, l *worker.Live, kv ports.KVStreams) WorkerInfo {
	wi := WorkerInfo{
		ID: l.ID, URL: l.DisplayURL(), WorkerType: string(l.Role), ConnectionMode: string(l.Mode),
		RuntimeType: string(l.Runtime), BootstrapPort: l.BootstrapPort, KVConnector: l.KVConnector,
		KVRole: l.KVRole, KVEngineID: l.EngineID(), Priority: l.Priority, Cost: l.Cost,
		Status: string(l.Status()), Load: l.Load(), Queued: l.Queued(), PDPairing: r.PairingKey(l.Worker),
	}
	wi.IsHealthy = wi.Status == string(worker.StatusReady)
	wi.KVEvents = kvInfo(kv, l)
	if l.DPRank != nil {
		wi.DPBaseURL, wi.DPRank, wi.DPSize = worker.RedactURL(l.BaseURL()), l.DPRank, l.DPSize
	}
	if len(l.Labels) > 0 {
		wi.Labels = make(map[string]string, len(l.Labels))
		for k, v := range l.Labels {
			wi.Labels[k] = v
		}
	}
	for _, m := range l.Models {
		wi.Models = append(wi.Models, registry.ModelCard{ID: m})
	}
	if len(l.Models) > 0 {
		wi.ModelID = l.Models[0]
	}
	return wi
}

// toErrorBody turns a use-case error into the worker-API error shape; anything that is not
// an *errs.Error is a 500 INTERNAL_SERVER_ERROR.
func toErrorBody(err error) error {
	if e, ok := errs.As(err); ok {
		return NewErrorBody(e.Status, e.Code, e.Message)
	}
	return NewErrorBody(http.StatusInternalServerError, wire.CodeWorkerInternalError, err.Error())
}
