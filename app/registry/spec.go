package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Spec is the JSON body of POST /workers (smg-spec.md §3.1), also used for the startup
// workers of --prefill/--decode/--worker-urls. Unknown keys are ignored, so bodies written for
// SMG (with http_pool, resilience, ...) are accepted. The seed's bodies ("Connector Modes",
// "MoRI-IO", the vLLM HTTP example) are accepted verbatim; unlike SMG v1.9 the top-level
// kv_connector, kv_role, kv_engine_id and bootstrap_port are honoured (seed "Where the
// Connector Comes From").
type Spec struct {
	_               struct{}          `additionalProperties:"true"` // unknown keys are ignored
	URL             string            `json:"url" doc:"Worker URL with a lowercase http://, https://, grpc://, grpcs:// or ipc:// scheme; a trailing '/' is dropped." example:"http://prefill-0:8000"`
	WorkerType      string            `json:"worker_type,omitempty" enum:"regular,prefill,decode,encode" default:"regular" doc:"The worker's role. ipc:// workers can only be regular."`
	ConnectionMode  string            `json:"connection_mode,omitempty" enum:"http,grpc,zmq" doc:"Accepted for compatibility; the URL scheme decides the transport."`
	RuntimeType     string            `json:"runtime_type,omitempty" enum:"unspecified,sglang,vllm,trtllm,mlx,tokenspeed,generic,external" doc:"The engine. Absent or unspecified: detected over HTTP (GET /v1/models owned_by, then /version for vLLM or /server_info for SGLang), default sglang."`
	Runtime         string            `json:"runtime,omitempty" doc:"Alias of runtime_type."`
	Models          []ModelCard       `json:"models,omitempty" doc:"Models served, as {\"id\": ...} objects (a bare id string is accepted too); absent: the ids the worker lists on GET /v1/models, or every model when it lists none."`
	Labels          map[string]string `json:"labels,omitempty" doc:"Free-form labels. kv_connector, kv_role, kv_engine_id and bootstrap_port here fill the dedicated fields (the top-level field wins)."`
	BootstrapPort   *int              `json:"bootstrap_port,omitempty" minimum:"1" maximum:"65535" doc:"Bootstrap server port of a prefill worker (SGLang; vLLM Mooncake)."`
	KVConnector     string            `json:"kv_connector,omitempty" doc:"vLLM KV connector, e.g. NixlConnector, MooncakeConnector, MoRIIOConnector. HTTP vLLM workers report none, so set it here."`
	KVRole          string            `json:"kv_role,omitempty" doc:"vLLM kv_role: kv_producer, kv_consumer or kv_both."`
	KVEngineID      string            `json:"kv_engine_id,omitempty" doc:"vLLM KV engine id; needed to mint Mooncake handoffs."`
	PairingProtocol string            `json:"pairing_protocol,omitempty" doc:"Explicit pairing protocol; stored as the pairing_protocol label unless that label is set."`
	Priority        *int              `json:"priority,omitempty" minimum:"0" doc:"Stored and displayed, not used for routing. Default 50."`
	Cost            *float64          `json:"cost,omitempty" minimum:"0" doc:"Stored and displayed, not used for routing. Default 1.0."`
	APIKey          string            `json:"api_key,omitempty" writeOnly:"true" doc:"Sent as a Bearer token on health and metadata probes; never returned."`
	Health          *HealthSpec       `json:"health,omitempty" doc:"Per-worker health-check overrides."`
}

// ModelCard names one model a worker serves (smg-spec.md §3.1). Only id is used; other
// ModelCard keys are ignored. A bare string is accepted as {"id": "<string>"}.
type ModelCard struct {
	_  struct{} `additionalProperties:"true"` // other ModelCard keys are ignored
	ID string   `json:"id" minLength:"1" doc:"Model id, as clients send it in the request's model field."`
}

// UnmarshalJSON accepts {"id": "..."} or "...".
func (m *ModelCard) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &m.ID)
	}
	type plain ModelCard
	return json.Unmarshal(b, (*plain)(m))
}

// HealthSpec holds per-worker health overrides (smg-spec.md §3.1 `health`). Absent fields
// use the gateway's --health-* and --drain-settle-secs values.
type HealthSpec struct {
	_                  struct{} `additionalProperties:"true"`
	TimeoutSecs        *int     `json:"timeout_secs,omitempty" minimum:"1" doc:"Probe timeout, seconds."`
	CheckIntervalSecs  *int     `json:"check_interval_secs,omitempty" minimum:"1" doc:"Seconds between probes."`
	SuccessThreshold   *int     `json:"success_threshold,omitempty" minimum:"1" doc:"Consecutive successes that make the worker ready."`
	FailureThreshold   *int     `json:"failure_threshold,omitempty" minimum:"1" doc:"Consecutive failures that make a ready worker not_ready."`
	DisableHealthCheck *bool    `json:"disable_health_check,omitempty" doc:"Never probe; the worker is ready once registered."`
	DrainSettleSecs    *int     `json:"drain_settle_secs,omitempty" minimum:"0" doc:"Seconds DELETE keeps a ready worker draining before removal."`
}

// Defaults of the stored-only fields (smg-spec.md §3.1).
const (
	DefaultPriority = 50
	DefaultCost     = 1.0
)

// ParseSpec decodes a POST /workers body. Empty bodies, invalid JSON, wrongly typed fields
// and trailing data give a 400 *errs.Error with code BAD_REQUEST.
func ParseSpec(body []byte) (Spec, error) {
	var s Spec
	if len(bytes.TrimSpace(body)) == 0 {
		return s, badRequest("Invalid JSON body: request body is empty")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&s); err != nil {
		return s, badRequest("Invalid JSON body: %s", jsonMessage(err))
	}
	if dec.More() {
		return s, badRequest("Invalid JSON body: unexpected data after the JSON object")
	}
	return s, nil
}

func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("the body must be a JSON object, got %s", te.Value)
		}
		return fmt.Sprintf("field '%s' must be %s, got %s", te.Field, jsonType(te.Type.Kind().String()), te.Value)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

func jsonType(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "int", "int64", "uint16", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	case "slice":
		return "an array"
	case "map", "struct", "ptr":
		return "an object"
	}
	return kind
}

// Build validates s and returns the worker it describes (without ID, runtime not yet
// detected). Every error is a 400 *errs.Error with code BAD_REQUEST and a message naming the
// field (smg-spec.md §3.2 step 1, §1.4 for ipc:// workers).
func (s Spec) Build() (worker.Worker, error) {
	var w worker.Worker
	raw := strings.TrimSpace(s.URL)
	if raw == "" {
		return w, badRequest("Invalid value for field 'url': the worker URL is required")
	}
	mode, err := worker.ValidateURL(raw)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), worker.ErrInvalidURL.Error()+": ")
		return w, badRequest("Invalid value for field 'worker_url': %s", msg)
	}
	if mode != worker.ConnZMQ {
		raw = strings.TrimRight(raw, "/")
	}
	w.URL, w.Mode = raw, mode

	role := worker.RoleRegular
	if s.WorkerType != "" {
		if role, err = worker.ParseRole(s.WorkerType); err != nil {
			return w, badRequest("Invalid value for field 'worker_type': %v", err)
		}
	}
	w.Role = role
	if mode == worker.ConnZMQ && role != worker.RoleRegular {
		return w, badRequest("ZMQ worker %s cannot serve worker type %s: the direct-ZMQ backend carries no KV-transfer metadata and has no encode path, so encode/prefill/decode disaggregation requires a gRPC worker", w.DisplayURL(), role)
	}
	if mode == worker.ConnHTTP && role == worker.RoleEncode {
		return w, badRequest("HTTP worker %s cannot serve worker type encode: encode workers are TokenSpeed encoder services reached over gRPC (grpc:// or grpcs://)", w.DisplayURL())
	}
	switch s.ConnectionMode {
	case "", string(worker.ConnHTTP), string(worker.ConnGRPC), string(worker.ConnZMQ):
	default:
		return w, badRequest("Invalid value for field 'connection_mode': %q (expected http, grpc or zmq)", s.ConnectionMode)
	}

	rt, alias := strings.ToLower(s.RuntimeType), strings.ToLower(s.Runtime)
	if rt != "" && alias != "" && rt != alias {
		return w, badRequest("Invalid value for field 'runtime': %q conflicts with runtime_type %q", s.Runtime, s.RuntimeType)
	}
	if rt == "" {
		rt = alias
	}
	if w.Runtime, err = worker.ParseRuntime(rt); err != nil {
		return w, badRequest("Invalid value for field 'runtime_type': %v", err)
	}

	for i, m := range s.Models {
		if strings.TrimSpace(m.ID) == "" {
			return w, badRequest("Invalid value for field 'models[%d].id': must not be empty", i)
		}
		w.Models = append(w.Models, m.ID)
	}
	if err := s.fillConnector(&w); err != nil {
		return w, err
	}

	w.Priority = DefaultPriority
	if s.Priority != nil {
		if *s.Priority < 0 {
			return w, badRequest("Invalid value for field 'priority': must be >= 0 (got %d)", *s.Priority)
		}
		w.Priority = *s.Priority
	}
	w.Cost = DefaultCost
	if s.Cost != nil {
		if *s.Cost < 0 {
			return w, badRequest("Invalid value for field 'cost': must be >= 0 (got %g)", *s.Cost)
		}
		w.Cost = *s.Cost
	}
	w.APIKey = s.APIKey
	if w.Health, err = s.Health.build(); err != nil {
		return w, err
	}
	return w, nil
}

// fillConnector copies labels and moves kv_connector, kv_role, kv_engine_id and
// bootstrap_port out of them into the dedicated fields; a top-level field wins over its
// label. An empty kv_engine_id is dropped (smg-spec.md §3.2 step 6).
func (s Spec) fillConnector(w *worker.Worker) error {
	labels := make(map[string]string, len(s.Labels)+1)
	for k, v := range s.Labels {
		labels[k] = v
	}
	take := func(field, key string) string {
		v, ok := labels[key]
		delete(labels, key)
		if field != "" || !ok {
			return field
		}
		return v
	}
	w.KVConnector = strings.TrimSpace(take(s.KVConnector, wire.LabelKVConnector))
	w.KVRole = strings.TrimSpace(take(s.KVRole, wire.LabelKVRole))
	w.KVEngineID = strings.TrimSpace(take(s.KVEngineID, wire.LabelKVEngineID))

	port := s.BootstrapPort
	if v, ok := labels[wire.LabelBootstrapPort]; ok {
		delete(labels, wire.LabelBootstrapPort)
		if port == nil {
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				return badRequest("Invalid value for label 'bootstrap_port': %q is not a port number", v)
			}
			port = &n
		}
	}
	if port != nil {
		if *port < 1 || *port > 65535 {
			return badRequest("Invalid value for field 'bootstrap_port': Port must be between 1 and 65535 (got %d)", *port)
		}
		p := *port
		w.BootstrapPort = &p
	}
	if s.PairingProtocol != "" {
		if _, ok := labels[wire.LabelPairingProtocol]; !ok {
			labels[wire.LabelPairingProtocol] = s.PairingProtocol
		}
	}
	if len(labels) > 0 {
		w.Labels = labels
	}
	return nil
}

func (h *HealthSpec) build() (worker.HealthConfig, error) {
	var c worker.HealthConfig
	if h == nil {
		return c, nil
	}
	secs := func(name string, v *int, min int) (time.Duration, error) {
		if v == nil {
			return 0, nil
		}
		if *v < min {
			return 0, badRequest("Invalid value for field 'health.%s': must be >= %d (got %d)", name, min, *v)
		}
		return time.Duration(*v) * time.Second, nil
	}
	count := func(name string, v *int) (int, error) {
		if v == nil {
			return 0, nil
		}
		if *v < 1 {
			return 0, badRequest("Invalid value for field 'health.%s': must be >= 1 (got %d)", name, *v)
		}
		return *v, nil
	}
	var err error
	if c.Timeout, err = secs("timeout_secs", h.TimeoutSecs, 1); err != nil {
		return c, err
	}
	if c.Interval, err = secs("check_interval_secs", h.CheckIntervalSecs, 1); err != nil {
		return c, err
	}
	if c.SuccessThreshold, err = count("success_threshold", h.SuccessThreshold); err != nil {
		return c, err
	}
	if c.FailureThreshold, err = count("failure_threshold", h.FailureThreshold); err != nil {
		return c, err
	}
	if h.DrainSettleSecs != nil {
		d, err := secs("drain_settle_secs", h.DrainSettleSecs, 0)
		if err != nil {
			return c, err
		}
		c.DrainSettle = &d
	}
	c.Disable = h.DisableHealthCheck != nil && *h.DisableHealthCheck
	return c, nil
}

func badRequest(format string, args ...any) *errs.Error {
	return errs.New(400, wire.CodeWorkerBadRequest, format, args...)
}
