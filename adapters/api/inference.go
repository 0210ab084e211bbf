package api

import (
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/smg-go/smg/domain/wire"
)

// The inference (data-plane) routes are served by the dispatcher's own handlers, which relay
// bytes to the engines: they are described in the document here (huma's OpenAPI only, with
// AddOperation), never parsed by huma.

const tagInference = "inference"

// Names of the shared components of the inference operations.
const (
	paramRequestID  = "RequestId"
	paramRoutingKey = "RoutingKey"
	headerRequestID = "RequestId"
	headerRouted    = "RoutedWorkerId"
	headerErrorCode = "ErrorCode"
	headerRetry     = "RetryAfter"
	schemaDataError = "DataError"
)

// inferenceError is one documented error status of the inference routes and its codes
// (seed "Error Codes", domain/wire).
type inferenceError struct {
	status int
	desc   string
}

var inferenceErrors = []inferenceError{
	{400, "The request is invalid: invalid_request, json_parse_error, invalid_request_id (a --request-id-headers value that is not a valid request id), context_length_exceeded (gRPC), admission_window_exceeded (gRPC: the request needs more decode slots, prompts × n, than the decode's whole admission window), runtime_pd_not_supported, moriio_fanout_unsupported, moriio_request_id_reserved, pd_decode_language_model_only_* (vLLM --language-model-only decode pools). An engine's own 4xx is passed through with its status."},
	{401, "--api-key or --tenants-file is set and the request does not carry the gateway's key or a tenant's as `Authorization: Bearer <key>` (or --tenant-header names no tenant of the file): invalid_api_key (with a WWW-Authenticate challenge)."},
	{404, "No registered worker serves the model: model_not_found."},
	{408, "The client did not send the body in time: body_read_timeout."},
	{413, "The body is over --max-payload-size: payload_too_large."},
	{429, "tenant_rate_limited: the request's tenant (--tenants-file) is over one of its limits (requests_per_minute, prompt_tokens_per_minute, output_tokens_per_minute, max_concurrent_requests); the message names the limit and its value, Retry-After says when the budget has room. Or an engine rate-limited the request; its status is passed through. Honour Retry-After when present."},
	{500, "internal_error, serialization_failed, tokenizer_not_found (gRPC)."},
	{501, "The route or feature has no prefill/decode split: not_supported, moriio_route_unsupported, moriio_grpc_pd_unsupported."},
	{502, "A leg failed: prefill_upstream_error (vLLM prefill error status, passed through), prefill_request_failed, prefill_read_failed, prefill_invalid_response, decode_request_failed, decode_invalid_response, decode_stream_failed, prefill_kv_transfer_failed, decode_kv_transfer_failed, moriio_handoff_invalid, prefill_worker_failed_to_start, decode_worker_failed_to_start, read_response_failed."},
	{503, "No worker can take the request: no_available_workers (the message names the leg), no_compatible_pd_pair, worker_overload_protection_shed (sent with Retry-After), moriio_pair_misconfigured, server_shutting_down (the grace period of a shutdown ended)."},
	{504, "A deadline passed: request_timeout (--request-timeout-secs), prefill_timeout, decode_timeout, decode_first_byte_timeout."},
}

// inferenceRoute is one documented data-plane operation.
type inferenceRoute struct {
	id, path, summary, desc string
	req, resp               reflect.Type
	respName                string       // component name of resp (when it is not a struct)
	stream                  reflect.Type // the JSON of each SSE event; nil: no stream variant
}

func inferenceRoutes() []inferenceRoute {
	pd := "Served through a prefill/decode pair (HTTP or gRPC PD): the gateway selects both legs, injects the KV handoff fields and relays the decode engine's answer byte for byte. Fields the schema does not list are relayed to the engines unchanged."
	return []inferenceRoute{
		{id: "create-chat-completion", path: wire.PathChatCompletions, summary: "Chat completion (OpenAI)",
			desc: pd, req: reflect.TypeFor[ChatCompletionRequest](), resp: reflect.TypeFor[ChatCompletion](),
			stream: reflect.TypeFor[ChatCompletionChunk]()},
		{id: "create-completion", path: wire.PathCompletions, summary: "Text completion (OpenAI)",
			desc: pd, req: reflect.TypeFor[CompletionRequest](), resp: reflect.TypeFor[Completion](),
			stream: reflect.TypeFor[Completion]()},
		{id: "generate", path: wire.PathGenerate, summary: "Generate (SGLang native)",
			desc: pd + " A batched prompt answers an array of GenerateResult.",
			req:  reflect.TypeFor[GenerateRequest](), resp: reflect.TypeFor[GenerateOutput](), respName: "GenerateOutput",
			stream: reflect.TypeFor[GenerateResult]()},
		{id: "create-message", path: wire.PathMessages, summary: "Message (Anthropic Messages)",
			desc: pd, req: reflect.TypeFor[MessagesRequest](), resp: reflect.TypeFor[Message](),
			stream: reflect.TypeFor[MessageStreamEvent]()},
		{id: "count-message-tokens", path: wire.PathCountTokens, summary: "Count tokens (Anthropic Messages)",
			desc: "Generates nothing. Over HTTP the request goes to one prefill worker, without bootstrap fields and without a decode leg; over gRPC the gateway answers from the model's tokenizer and contacts no worker.",
			req:  reflect.TypeFor[CountTokensRequest](), resp: reflect.TypeFor[CountTokensResponse]()},
		{id: "create-response", path: wire.PathResponses, summary: "Response (OpenAI Responses)",
			desc: pd + " Stored-response features belong to the engine: the gateway does not track which decode worker holds a stored response, so send store false.",
			req:  reflect.TypeFor[ResponsesRequest](), resp: reflect.TypeFor[Response](),
			stream: reflect.TypeFor[ResponseStreamEvent]()},
		{id: "rerank", path: wire.PathRerank, summary: "Rerank documents",
			desc: pd + " HTTP PD only (gRPC answers 501). vLLM answers an object with results, SGLang an array.",
			req:  reflect.TypeFor[RerankRequest](), resp: reflect.TypeFor[RerankOutput](), respName: "RerankOutput"},
		{id: "rerank-legacy", path: wire.PathRerankLegacy, summary: "Rerank documents (alias of /v1/rerank)",
			desc: "Same as POST /v1/rerank.",
			req:  reflect.TypeFor[RerankRequest](), resp: reflect.TypeFor[RerankOutput](), respName: "RerankOutput"},
	}
}

// registerInference adds the data-plane operations, their shared headers, parameters and
// error responses to the document. Nothing is routed through huma: the dispatcher serves
// these paths (app/dispatch).
func registerInference(h huma.API) {
	oa := h.OpenAPI()
	c := oa.Components
	reg := c.Schemas
	reg.Schema(reflect.TypeFor[DataError](), true, schemaDataError)
	declareInferenceComponents(c)

	for _, r := range inferenceRoutes() {
		name := r.respName
		if name == "" {
			name = r.resp.Name()
		}
		ok := &huma.Response{Description: "OK", Headers: map[string]*huma.Header{
			wire.HeaderRequestID:    {Ref: "#/components/headers/" + headerRequestID},
			wire.HeaderRoutedWorker: {Ref: "#/components/headers/" + headerRouted},
		}, Content: map[string]*huma.MediaType{
			"application/json": {Schema: reg.Schema(r.resp, true, name)},
		}}
		if r.stream != nil {
			ok.Description = "OK. With stream true: text/event-stream, one `data: <json>` event per chunk (the schema is the JSON of one event; named events carry an `event:` line too), ended by `data: [DONE]` on the OpenAI and /generate routes. An error after the stream started arrives as a `data: {\"error\":{...}}` event."
			ok.Content["text/event-stream"] = &huma.MediaType{Schema: reg.Schema(r.stream, true, r.stream.Name())}
		}
		op := &huma.Operation{
			OperationID: r.id, Method: http.MethodPost, Path: r.path,
			Summary: r.summary, Description: r.desc, Tags: []string{tagInference},
			Security: security(SchemeData),
			Parameters: []*huma.Param{
				{Ref: "#/components/parameters/" + paramRequestID},
				{Ref: "#/components/parameters/" + paramRoutingKey},
			},
			RequestBody: &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
				"application/json": {Schema: reg.Schema(r.req, true, r.req.Name())},
			}},
			Responses: map[string]*huma.Response{"200": ok},
		}
		for _, e := range inferenceErrors {
			op.Responses[strconv.Itoa(e.status)] = &huma.Response{Ref: "#/components/responses/" + errorResponseName(e.status)}
		}
		oa.AddOperation(op)
	}
	registerUnsupported(oa)
}

func errorResponseName(status int) string { return "Error" + strconv.Itoa(status) }

// declareInferenceComponents adds the shared parameters, headers and error responses.
func declareInferenceComponents(c *huma.Components) {
	if c.Parameters == nil {
		c.Parameters = map[string]*huma.Param{}
	}
	if c.Headers == nil {
		c.Headers = map[string]*huma.Header{}
	}
	if c.Responses == nil {
		c.Responses = map[string]*huma.Response{}
	}
	str := &huma.Schema{Type: huma.TypeString}
	c.Parameters[paramRequestID] = &huma.Param{Name: wire.HeaderRequestID, In: "header", Schema: &huma.Schema{Type: huma.TypeString, MaxLength: intPtr(wire.MaxRequestIDLen), Pattern: `^[A-Za-z0-9._:/+=@-]+$`},
		Description: "Client request id: answered back in X-Request-Id and forwarded to both engines. The gateway reads the first of --request-id-headers (default x-request-id, x-correlation-id, x-trace-id, request-id) and mints one when none is sent. An invalid value is answered 400 invalid_request_id."}
	c.Parameters[paramRoutingKey] = &huma.Param{Name: wire.HeaderRoutingKey, In: "header", Schema: str,
		Description: "Routing key for the consistent-hashing policies (the first of --routing-key-headers, default x-smg-routing-key): requests with the same key go to the same workers while they are healthy."}
	c.Headers[headerRequestID] = &huma.Header{Schema: str, Description: "The request id: the client's, or one the gateway minted. Also forwarded to both engines."}
	c.Headers[headerRouted] = &huma.Header{Schema: str, Description: "Id of the decode worker that answered (GET /workers/{id})."}
	c.Headers[headerErrorCode] = &huma.Header{Schema: str, Description: "The error code of the body (error.code), on every gateway error."}
	c.Headers[headerRetry] = &huma.Header{Schema: &huma.Schema{Type: huma.TypeInteger, Minimum: floatPtr(0)},
		Description: "Seconds to wait before retrying. Always sent with 503 worker_overload_protection_shed; honour it on 429 when present."}
	for _, e := range inferenceErrors {
		hdr := map[string]*huma.Header{
			wire.HeaderErrorCode: {Ref: "#/components/headers/" + headerErrorCode},
			wire.HeaderRequestID: {Ref: "#/components/headers/" + headerRequestID},
		}
		if e.status == http.StatusServiceUnavailable || e.status == http.StatusTooManyRequests {
			hdr[wire.HeaderRetryAfter] = &huma.Header{Ref: "#/components/headers/" + headerRetry}
		}
		c.Responses[errorResponseName(e.status)] = &huma.Response{
			Description: http.StatusText(e.status) + ". " + e.desc,
			Headers:     hdr,
			Content: map[string]*huma.MediaType{"application/json": {
				Schema: &huma.Schema{Ref: "#/components/schemas/" + schemaDataError}}},
		}
	}
}

// registerUnsupported documents the data-plane routes PD mode answers with 501 not_supported.
func registerUnsupported(oa *huma.OpenAPI) {
	notImpl := map[string]*huma.Response{"501": {Ref: "#/components/responses/" + errorResponseName(501)}}
	for _, u := range []struct{ id, method, path, summary string }{
		{"create-embedding", http.MethodPost, "/v1/embeddings", "Embeddings (not served in PD mode)"},
		{"classify", http.MethodPost, "/v1/classify", "Classification (not served in PD mode)"},
		{"classify-legacy", http.MethodPost, "/classify", "Classification (not served in PD mode)"},
		{"score", http.MethodPost, "/v1/score", "Scoring (not served in PD mode)"},
		{"get-response", http.MethodGet, wire.PathResponses + "/{id}", "Stored response (not served in PD mode)"},
		{"delete-response", http.MethodDelete, wire.PathResponses + "/{id}", "Delete a stored response (not served in PD mode)"},
		{"cancel-response", http.MethodPost, wire.PathResponses + "/{id}/cancel", "Cancel a background response (not served in PD mode)"},
		{"list-response-input-items", http.MethodGet, wire.PathResponses + "/{id}/input_items", "Input items of a stored response (not served in PD mode)"},
	} {
		op := &huma.Operation{OperationID: u.id, Method: u.method, Path: u.path, Summary: u.summary,
			Description: "Always 501 not_supported: embeddings and classification have no prefill/decode split, and a stored response lives on the decode worker that answered it, which the gateway does not track.",
			Tags:        []string{tagInference}, Security: security(SchemeData), Responses: notImpl}
		if strings.HasPrefix(u.path, wire.PathResponses+"/") {
			op.Parameters = []*huma.Param{{Name: "id", In: "path", Required: true, Schema: &huma.Schema{Type: huma.TypeString}}}
		}
		oa.AddOperation(op)
	}
}

func intPtr(v int) *int           { return &v }
func floatPtr(v float64) *float64 { return &v }
