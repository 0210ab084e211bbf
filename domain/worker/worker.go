// Package worker defines an inference worker as the gateway sees it: its immutable
// registration (Worker) and its live, concurrently updated state (Live).
//
// Facts: shared/reference/smg-spec.md §3.1 (worker spec), §3.5 (statuses), §3.7 (bootstrap
// host derivation); the seed's "Supported Engines" and "Where the Connector Comes From".
package worker

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// Role is a worker's part in a request: "regular", "prefill", "decode" or "encode".
type Role string

// The worker roles (smg-spec.md §3.1 `worker_type`).
const (
	RoleRegular Role = "regular"
	RolePrefill Role = "prefill"
	RoleDecode  Role = "decode"
	RoleEncode  Role = "encode"
)

// ParseRole returns the Role for s, or an error naming the accepted values.
func ParseRole(s string) (Role, error) {
	switch r := Role(s); r {
	case RoleRegular, RolePrefill, RoleDecode, RoleEncode:
		return r, nil
	}
	return "", fmt.Errorf("unknown worker_type %q (expected regular, prefill, decode or encode)", s)
}

// Runtime is the engine behind a worker (smg-spec.md §3.1 `runtime_type`).
type Runtime string

// The runtimes. Only sglang, vllm and tokenspeed have a PD protocol.
const (
	RuntimeUnspecified Runtime = "unspecified"
	RuntimeSGLang      Runtime = "sglang"
	RuntimeVLLM        Runtime = "vllm"
	RuntimeTRTLLM      Runtime = "trtllm"
	RuntimeMLX         Runtime = "mlx"
	RuntimeTokenSpeed  Runtime = "tokenspeed"
	RuntimeGeneric     Runtime = "generic"
	RuntimeExternal    Runtime = "external"
)

// HasGRPCService reports whether the gateway speaks rt's gRPC engine service: the SGLang,
// vLLM and TokenSpeed services of SMG's protos (grpc.md §1.2), or an unspecified runtime,
// which is detected among them. TensorRT-LLM, MLX and the other runtimes are not, so a
// grpc:// worker of theirs can be neither detected nor health-probed here.
func (rt Runtime) HasGRPCService() bool {
	switch rt {
	case RuntimeUnspecified, "", RuntimeSGLang, RuntimeVLLM, RuntimeTokenSpeed:
		return true
	}
	return false
}

// ParseRuntime returns the Runtime for s ("" is unspecified), or an error naming the accepted values.
func ParseRuntime(s string) (Runtime, error) {
	if s == "" {
		return RuntimeUnspecified, nil
	}
	switch r := Runtime(strings.ToLower(s)); r {
	case RuntimeUnspecified, RuntimeSGLang, RuntimeVLLM, RuntimeTRTLLM, RuntimeMLX,
		RuntimeTokenSpeed, RuntimeGeneric, RuntimeExternal:
		return r, nil
	}
	return "", fmt.Errorf("unknown runtime_type %q (expected sglang, vllm, trtllm, mlx, tokenspeed, generic or external)", s)
}

// ConnectionMode is the transport to a worker, taken from its URL scheme.
type ConnectionMode string

// The connection modes (smg-spec.md §1.2).
const (
	ConnHTTP ConnectionMode = "http"
	ConnGRPC ConnectionMode = "grpc"
	ConnZMQ  ConnectionMode = "zmq"
)

// Status is a worker's lifecycle state (smg-spec.md §3.5). Only StatusReady is routable.
type Status string

// The worker statuses.
const (
	StatusPending  Status = "pending"
	StatusReady    Status = "ready"
	StatusNotReady Status = "not_ready"
	StatusFailed   Status = "failed"
	StatusDraining Status = "draining"
)

// Worker is the immutable registration of one worker. A change (PATCH, re-registration)
// replaces the value; nothing mutates it in place, so it may be shared between goroutines.
type Worker struct {
	// ID is the gateway-assigned UUID (text form).
	ID string
	// URL is the worker URL as registered, e.g. "http://10.0.0.1:8000" or "http://h:8000@2"
	// for a --dp-aware rank.
	URL string
	// Role is prefill, decode, encode or regular.
	Role Role
	// Runtime is the engine; RuntimeUnspecified until detected.
	Runtime Runtime
	// Mode is the transport from the URL scheme.
	Mode ConnectionMode
	// Models are the model ids the worker serves; empty means "any model" (wildcard).
	Models []string
	// Labels are free-form facts (pairing components, MoRI-IO settings, windows, ...).
	Labels map[string]string
	// BootstrapPort is the prefill's bootstrap server port; nil when registered without one.
	BootstrapPort *int
	// KVConnector is the vLLM KV connector name as registered ("NixlConnector", ...), or "".
	KVConnector string
	// KVRole is the vLLM kv_role ("kv_producer", "kv_consumer", "kv_both"), or "".
	KVRole string
	// KVEngineID is the vLLM KV engine id (needed to mint Mooncake handoffs), or "".
	KVEngineID string
	// DPRank and DPSize are set for --dp-aware expansions; nil otherwise.
	DPRank, DPSize *int
	// Priority and Cost are stored and displayed, not used by routing (smg-spec.md §3.1).
	Priority int
	Cost     float64
	// APIKey is sent as a Bearer token on health and metadata probes; never serialized.
	APIKey string
	// Health holds this worker's health-check overrides (zero = gateway defaults).
	Health HealthConfig
}

// ErrInvalidURL is wrapped by ValidateURL's errors.
var ErrInvalidURL = errors.New("invalid worker url")

// ValidateURL checks a worker URL as smg-spec.md §3.1 does: a lowercase http://, https://,
// grpc://, grpcs:// or ipc:// scheme; non-ipc URLs must parse and have a host; ipc:// needs a
// path. It returns the connection mode the scheme selects. Errors wrap ErrInvalidURL.
func ValidateURL(raw string) (ConnectionMode, error) {
	base := stripDPSuffix(raw)
	var mode ConnectionMode
	switch {
	case strings.HasPrefix(base, "http://"), strings.HasPrefix(base, "https://"):
		mode = ConnHTTP
	case strings.HasPrefix(base, "grpc://"), strings.HasPrefix(base, "grpcs://"):
		mode = ConnGRPC
	case strings.HasPrefix(base, "ipc://"):
		if len(base) == len("ipc://") {
			return "", fmt.Errorf("%w: %s - ipc:// URL needs a socket path", ErrInvalidURL, raw)
		}
		return ConnZMQ, nil
	default:
		return "", fmt.Errorf("%w: %s - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme", ErrInvalidURL, raw)
	}
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%w: %s - %v", ErrInvalidURL, raw, err)
	}
	if u.Hostname() == "" {
		return "", fmt.Errorf("%w: %s - URL has no host", ErrInvalidURL, raw)
	}
	if numericNonIP(u.Hostname()) {
		return "", fmt.Errorf("%w: %s - host %q is neither an IP address in standard form nor a DNS name", ErrInvalidURL, raw, u.Hostname())
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%w: %s - port must be between 1 and 65535", ErrInvalidURL, raw)
		}
	}
	return mode, nil
}

// numericNonIP reports whether host looks like an address but is not one in standard form:
// "127.1", "2130706433", "0x7f000001", "0177.0.0.1". Go does not parse these as IPs, so they
// would be resolved through DNS and never answer (a DNS name's last label is never all digits,
// RFC 3696 §2); refusing them keeps such registrations from sitting pending forever.
func numericNonIP(host string) bool {
	if _, err := netip.ParseAddr(host); err == nil {
		return false
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// BaseURL is the URL with a trailing DP-rank suffix ("@<digits>") removed: the address legs
// are POSTed to (smg-spec.md §2.5.4).
func (w Worker) BaseURL() string { return stripDPSuffix(w.URL) }

// BootstrapHost is the host SGLang legs are pointed at: the URL's hostname with the DP suffix
// stripped, IPv6 literals wrapped in brackets, "localhost" when nothing parses
// (smg-spec.md §3.7; engines.md §2.1).
func (w Worker) BootstrapHost() string {
	base := stripDPSuffix(w.URL)
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		u, err = url.Parse("http://" + base)
		if err != nil || u.Hostname() == "" {
			return "localhost"
		}
	}
	h := u.Hostname()
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// ServedModel returns the model id the worker serves first (the one a request without a
// model is served and counted under), or "" for a worker that serves any model.
func (w Worker) ServedModel() string {
	if len(w.Models) == 0 {
		return ""
	}
	return w.Models[0]
}

// ServesModel reports whether the worker serves model id m. A worker without models serves
// every model.
func (w Worker) ServesModel(m string) bool {
	if len(w.Models) == 0 {
		return true
	}
	for _, id := range w.Models {
		if id == m {
			return true
		}
	}
	return false
}

// Label returns the label value for key and whether it is set.
func (w Worker) Label(key string) (string, bool) {
	v, ok := w.Labels[key]
	return v, ok
}

func stripDPSuffix(raw string) string {
	i := strings.LastIndexByte(raw, '@')
	if i < 0 || i == len(raw)-1 {
		return raw
	}
	for _, c := range raw[i+1:] {
		if c < '0' || c > '9' {
			return raw
		}
	}
	return raw[:i]
}
