package api

import (
	"context"
	"encoding/json"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/smg-go/smg/domain/worker"
)

// Readiness is the /readiness body (smg-spec.md §3.8): 200
// {"status":"ready","healthy_workers":H,"total_workers":T} or 503
// {"status":"not ready","reason":"insufficient healthy workers"}, or, from SIGTERM on, 503
// {"status":"not ready","reason":"draining"} (smg-spec.md §3.8 lists the reason).
type Readiness struct {
	Status         string `json:"status" enum:"ready,not ready"`
	HealthyWorkers *int   `json:"healthy_workers,omitempty" doc:"Workers with status ready (only when ready)."`
	TotalWorkers   *int   `json:"total_workers,omitempty" doc:"Registered workers (only when ready)."`
	Reason         string `json:"reason,omitempty" enum:"insufficient healthy workers,draining" doc:"Why the gateway is not ready (only when not ready); draining: it is shutting down."`
}

// DataError is the data plane's error body (errs.Body):
// {"error":{"type","code","message","param":null}}.
type DataError struct {
	Error struct {
		Type    string  `json:"type" doc:"OpenAI-style error type." example:"authentication_error"`
		Code    string  `json:"code" doc:"Stable machine-readable code, also in X-SMG-Error-Code." example:"invalid_api_key"`
		Message string  `json:"message" doc:"Human-readable explanation."`
		Param   *string `json:"param" doc:"Always null."`
	} `json:"error"`
}

// Model is one /v1/models entry.
type Model struct {
	ID      string `json:"id"`
	Object  string `json:"object" enum:"model"`
	Created int64  `json:"created" doc:"Always 0."`
	OwnedBy string `json:"owned_by" example:"self_hosted"`
}

// ModelList is the /v1/models 200 body (smg-spec.md §3.8).
type ModelList struct {
	Object string  `json:"object" enum:"list"`
	Data   []Model `json:"data" nullable:"false"`
}

// Readiness reasons and the /v1/models empty answer (smg-spec.md §3.8).
const (
	ReasonInsufficientWorkers = "insufficient healthy workers"
	ReasonDraining            = "draining"
	NoModelsAvailable         = "No models available"
)

type plainOutput struct {
	ContentType string `header:"Content-Type"`
	Body        []byte
}

type readinessOutput struct {
	Status int
	Body   Readiness
}

type modelsOutput struct {
	Status      int
	ContentType string `header:"Content-Type"`
	Body        []byte
}

const (
	tagHealth = "health"
	tagModels = "models"
)

func textResponse(desc string) *huma.Response {
	return &huma.Response{Description: desc, Content: map[string]*huma.MediaType{
		"text/plain": {Schema: &huma.Schema{Type: huma.TypeString}},
	}}
}

func registerHealth(h huma.API, d Deps) {
	ok := func(context.Context, *struct{}) (*plainOutput, error) {
		return &plainOutput{ContentType: "text/plain", Body: []byte("OK")}, nil
	}
	for _, p := range []struct{ id, path, summary string }{
		{"health", "/health", "Gateway liveness (always 200 OK)"},
		{"liveness", "/liveness", "Gateway liveness (always 200 OK)"},
	} {
		huma.Register(h, huma.Operation{
			OperationID: p.id, Method: http.MethodGet, Path: p.path, Summary: p.summary,
			Description: "Answers 200 text/plain OK while the process serves HTTP, whatever the workers' state.",
			Tags:        []string{tagHealth}, Security: open,
			Responses: map[string]*huma.Response{"200": textResponse("OK")},
		}, ok)
	}

	schemas := h.OpenAPI().Components.Schemas
	readySchema := schemas.Schema(reflect.TypeFor[Readiness](), true, "Readiness")
	huma.Register(h, huma.Operation{
		OperationID: "readiness", Method: http.MethodGet, Path: "/readiness",
		Summary:     "Gateway readiness",
		Description: "Ready when at least one worker is healthy (status ready); with --pd-disaggregation, when at least one prefill and one decode worker are healthy. With --ready-without-workers it is also ready while no worker at all is registered (healthy_workers 0, total_workers 0). From SIGTERM on it answers 503 with reason draining while requests are still served for --shutdown-drain-delay-secs.",
		Tags:        []string{tagHealth}, Security: open,
		Responses: map[string]*huma.Response{"503": {Description: "Not ready", Content: map[string]*huma.MediaType{
			"application/json": {Schema: readySchema},
		}}},
	}, func(context.Context, *struct{}) (*readinessOutput, error) {
		return readiness(d), nil
	})

	listSchema := schemas.Schema(reflect.TypeFor[ModelList](), true, "ModelList")
	dataErr := schemas.Schema(reflect.TypeFor[DataError](), true, "DataError")
	huma.Register(h, huma.Operation{
		OperationID: "list-models", Method: http.MethodGet, Path: "/v1/models",
		Middlewares: huma.Middlewares{requireDataKey(d.Auth)},
		Security:    security(SchemeData),
		Summary:     "List models",
		Description: "The model ids of every registered worker (prefill and decode alike), de-duplicated, in registration order. 503 text/plain 'No models available' when no worker names a model.",
		Tags:        []string{tagModels},
		Responses: map[string]*huma.Response{
			"200": {Description: "OK", Content: map[string]*huma.MediaType{"application/json": {Schema: listSchema}}},
			"401": {Description: "--api-key is set and the request does not carry it (code invalid_api_key, also in X-SMG-Error-Code).", Content: map[string]*huma.MediaType{
				"application/json": {Schema: dataErr},
			}},
			"503": textResponse(NoModelsAvailable),
		},
	}, func(context.Context, *struct{}) (*modelsOutput, error) {
		return models(d)
	})
}

func readiness(d Deps) *readinessOutput {
	if d.Drain != nil && d.Drain.Draining() {
		return &readinessOutput{Status: http.StatusServiceUnavailable,
			Body: Readiness{Status: "not ready", Reason: ReasonDraining}}
	}
	var healthy, total, prefill, decode, encode int
	for _, l := range d.Store.List() {
		total++
		if !l.Healthy() {
			continue
		}
		healthy++
		switch l.Role {
		case worker.RolePrefill:
			prefill++
		case worker.RoleDecode:
			decode++
		case worker.RoleEncode:
			encode++
		}
	}
	ready := healthy > 0
	if d.PDDisaggregation {
		ready = prefill > 0 && decode > 0
	}
	if d.EPDDisaggregation {
		ready = ready && encode > 0 // seed: "and an encode worker in EPD mode"
	}
	if total == 0 && d.ReadyWithoutWorkers {
		ready = true // an empty gateway waiting for POST /workers (--ready-without-workers)
	}
	if !ready {
		return &readinessOutput{Status: http.StatusServiceUnavailable,
			Body: Readiness{Status: "not ready", Reason: ReasonInsufficientWorkers}}
	}
	return &readinessOutput{Status: http.StatusOK,
		Body: Readiness{Status: "ready", HealthyWorkers: &healthy, TotalWorkers: &total}}
}

func models(d Deps) (*modelsOutput, error) {
	list := ModelList{Object: "list", Data: []Model{}}
	seen := map[string]bool{}
	for _, l := range d.Store.List() {
		if l.Runtime == worker.RuntimeExternal {
			continue
		}
		for _, id := range l.Models {
			if !seen[id] {
				seen[id] = true
				list.Data = append(list.Data, Model{ID: id, Object: "model", OwnedBy: "self_hosted"})
			}
		}
	}
	if len(list.Data) == 0 {
		return &modelsOutput{Status: http.StatusServiceUnavailable, ContentType: "text/plain", Body: []byte(NoModelsAvailable)}, nil
	}
	b, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	return &modelsOutput{Status: http.StatusOK, ContentType: "application/json", Body: b}, nil
}
