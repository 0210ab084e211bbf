// Package api is the gateway's admin and health HTTP API, served with huma v2 on the main
// http.ServeMux: worker management (POST/GET/DELETE /workers), /health, /liveness,
// /readiness and /v1/models (smg-spec.md §3.2, §3.4, §3.8). Its OpenAPI 3.1 document also
// describes the inference routes, which the dispatcher serves (inference.go only documents
// them). The document is served at /openapi.yaml and /openapi.json (3.0 downgrade at
// /openapi-3.0.*) and committed under openapi/; /docs renders it with a viewer embedded in
// the binary (docs.go).
package api

import (
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strings"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humago"

	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/app/version"
	"github.com/smg-go/smg/domain/wire"
)

// Paths of the API documents served by NewHumaAPI.
const (
	OpenAPIPath = "/openapi" // + ".yaml" / ".json" (3.1), "-3.0.yaml" / "-3.0.json"
	DocsPath    = "/docs"
)

// ErrorBody is the worker-API error shape {"error":"<text>","code":"<CODE>"}
// (smg-spec.md §3.4, §6.6). Every error this API answers with has it, including the ones
// huma itself raises (a request body over the limit, a bad parameter): huma.NewError is set
// to build an ErrorBody when this package is loaded.
type ErrorBody struct {
	status int
	// Message is the human-readable explanation.
	Message string `json:"error" doc:"Human-readable explanation." example:"Worker 6f1c0a54-2b7e-4c8e-9d55-0c2f0e0f6a11 not found"`
	// Code is the stable machine-readable code: BAD_REQUEST, WORKER_NOT_FOUND,
	// WORKER_ALREADY_EXISTS, INTERNAL_SERVER_ERROR, or the status's reason in upper snake case.
	Code string `json:"code" doc:"Stable machine-readable code." example:"WORKER_NOT_FOUND"`
}

// Error implements error.
func (e *ErrorBody) Error() string { return e.Message }

// GetStatus implements huma.StatusError.
func (e *ErrorBody) GetStatus() int { return e.status }

// ContentType implements huma.ContentTypeFilter: errors are plain application/json.
func (e *ErrorBody) ContentType(string) string { return "application/json" }

// NewErrorBody builds an ErrorBody answered with status.
func NewErrorBody(status int, code, message string) *ErrorBody {
	return &ErrorBody{status: status, Code: code, Message: message}
}

func init() {
	huma.NewError = newHumaError
}

// newHumaError maps huma's own errors into the worker-API shape. Validation failures
// (huma's 422) are answered as 400 BAD_REQUEST, as the worker API does (smg-spec.md §3.2).
func newHumaError(status int, msg string, errs ...error) huma.StatusError {
	if status == http.StatusUnprocessableEntity {
		status = http.StatusBadRequest
	}
	for _, err := range errs {
		// A body cut off by the server's --max-payload-size (http.MaxBytesHandler) is the
		// client's fault: 413, not huma's generic 500 "cannot read request body".
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			status = http.StatusRequestEntityTooLarge
		}
	}
	parts := []string{}
	if msg != "" {
		parts = append(parts, msg)
	}
	for _, err := range errs {
		if err == nil {
			continue
		}
		if d, ok := err.(huma.ErrorDetailer); ok {
			det := d.ErrorDetail()
			if det.Location != "" {
				parts = append(parts, det.Location+": "+det.Message)
				continue
			}
			parts = append(parts, det.Message)
			continue
		}
		parts = append(parts, err.Error())
	}
	return &ErrorBody{status: status, Code: codeForStatus(status), Message: strings.Join(parts, "; ")}
}

func codeForStatus(status int) string {
	switch status {
	case http.StatusBadRequest:
		return wire.CodeWorkerBadRequest
	case http.StatusInternalServerError:
		return wire.CodeWorkerInternalError
	}
	if t := http.StatusText(status); t != "" {
		return strings.ToUpper(strings.NewReplacer(" ", "_", "-", "_", "'", "").Replace(t))
	}
	return "ERROR"
}

// NewHumaAPI builds the huma API on mux: OpenAPI 3.1 titled "smg" with version.Version, the
// document at /openapi.yaml and /openapi.json (3.0 downgrades at /openapi-3.0.*), and the
// API reference at /docs with its viewer embedded in the binary (mountDocs). Response bodies
// carry no "$schema" links. Register adds the operations.
func NewHumaAPI(mux *http.ServeMux) huma.API {
	cfg := huma.DefaultConfig("smg", version.Version)
	cfg.Components.Schemas = huma.NewMapRegistry("#/components/schemas/", schemaName)
	cfg.CreateHooks = nil // no $schema field in bodies, no Link headers
	cfg.SchemasPath = ""
	cfg.OpenAPIPath = "" // mountOpenAPI serves the documents, rendered once under a lock
	cfg.DocsPath = ""    // huma's page loads its viewer from a CDN; mountDocs serves an embedded one
	// The description is Markdown (the /docs viewer renders it): bodies are code spans, so
	// placeholders such as <text> are not read as HTML tags.
	cfg.Info.Description = "smg, a prefill/decode disaggregation gateway for LLM engines (SGLang, vLLM, TokenSpeed).\n\n" +
		"**Inference**: OpenAI chat and completions, SGLang `/generate`, Anthropic messages and token counting, " +
		"OpenAI Responses and rerank, relayed to a prefill/decode pair; errors use the body " +
		"`{\"error\":{\"type\",\"code\",\"message\",\"param\":null}}` with the code also in `X-SMG-Error-Code`.\n\n" +
		"**Admin**: worker registration and listing (errors use `{\"error\":\"<text>\",\"code\":\"<CODE>\"}`), " +
		"liveness, readiness and the model list."
	cfg.Tags = apiTags
	// A relative server: the /docs viewer's Try-It and generated clients without a base URL
	// send to the origin that served the document (the gateway, or the ingress in front of
	// it), not to a fixed host and port.
	cfg.Servers = []*huma.Server{{
		URL:         "/",
		Description: "This gateway (the origin serving the document)",
	}}
	api := humago.New(mux, cfg)
	mountOpenAPI(mux, api)
	mountDocs(mux)
	return api
}

// schemaNames renames types whose Go names read badly in the document.
var schemaNames = map[reflect.Type]string{
	reflect.TypeFor[registry.Spec]():       "WorkerSpec",
	reflect.TypeFor[registry.HealthSpec](): "WorkerHealth",
	reflect.TypeFor[ErrorBody]():           "WorkerError",
}

func schemaName(t reflect.Type, hint string) string {
	if n, ok := schemaNames[t]; ok {
		return n
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
		if n, ok := schemaNames[t]; ok {
			return n
		}
	}
	return huma.DefaultSchemaNamer(t, hint)
}

// OpenAPIYAML returns the OpenAPI 3.1 document of the API as YAML, built without a server
// or any dependency (`smg openapi` writes it to openapi/openapi.yaml). It is byte-identical
// to what GET /openapi.yaml serves.
func OpenAPIYAML() ([]byte, error) {
	h := NewHumaAPI(http.NewServeMux())
	Register(h, Deps{})
	return h.OpenAPI().YAML()
}

// OpenAPI30YAML is OpenAPIYAML downgraded to OpenAPI 3.0 (huma's Downgrade), byte-identical
// to GET /openapi-3.0.yaml: the input of generators that read only 3.0, such as
// oapi-codegen (clients/go).
func OpenAPI30YAML() ([]byte, error) {
	h := NewHumaAPI(http.NewServeMux())
	Register(h, Deps{})
	return h.OpenAPI().DowngradeYAML()
}

// OpenAPIJSON is OpenAPIYAML as JSON, byte-identical to GET /openapi.json.
func OpenAPIJSON() ([]byte, error) {
	h := NewHumaAPI(http.NewServeMux())
	Register(h, Deps{})
	return json.Marshal(h.OpenAPI())
}

// OpenAPI30JSON is OpenAPI30YAML as JSON, byte-identical to GET /openapi-3.0.json.
func OpenAPI30JSON() ([]byte, error) {
	h := NewHumaAPI(http.NewServeMux())
	Register(h, Deps{})
	return h.OpenAPI().Downgrade()
}
