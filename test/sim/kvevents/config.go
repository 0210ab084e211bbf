package kvevents

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Engine names [ParseConfig] knows: their flag dialects differ.
const (
	EngineVLLM   = "vllm"
	EngineSGLang = "sglang"
)

// Publisher kinds of the "publisher" key.
const (
	PublisherNull = "null"
	PublisherZMQ  = "zmq"
)

// Config is the engines' --kv-events-config JSON, with vLLM's keys and defaults
// (vllm/config/kv_events.py KVEventsConfig; SGLang's KVEventsConfig has the same keys
// without enable_kv_cache_events).
type Config struct {
	// EnableKVCacheEvents is "enable_kv_cache_events" (vLLM only; default false).
	EnableKVCacheEvents bool `json:"enable_kv_cache_events"`
	// Publisher is "publisher", "null" or "zmq". vLLM: unset becomes "zmq" when events
	// are enabled, else "null". SGLang: unset is "null".
	Publisher string `json:"publisher"`
	// Endpoint is "endpoint", the PUB endpoint (default "tcp://*:5557"). A wildcard host
	// ("*" or "::") or an ipc:// / inproc:// endpoint is bound, anything else is connected
	// to (the engines' heuristic).
	Endpoint string `json:"endpoint"`
	// ReplayEndpoint is "replay_endpoint", the ROUTER endpoint (always bound); "" (the
	// default, JSON null) means no replay socket.
	ReplayEndpoint string `json:"replay_endpoint"`
	// BufferSteps is "buffer_steps": how many past batches the replay buffer keeps
	// (default 10000).
	BufferSteps int `json:"buffer_steps"`
	// HWM is "hwm": the PUB send high-water mark in messages (default 100000; 0 = no
	// limit, as in ZMQ).
	HWM int `json:"hwm"`
	// MaxQueueSize is "max_queue_size": how many batches wait for the publisher before
	// new ones are dropped (default 100000; 0 = no bound, as Python's Queue(maxsize=0)).
	MaxQueueSize int `json:"max_queue_size"`
	// Topic is "topic", the first frame of every PUB message (default "").
	Topic string `json:"topic"`
}

// DefaultConfig is KVEventsConfig's defaults: disabled, publisher "null", endpoint
// tcp://*:5557, no replay, buffer_steps 10000, hwm 100000, max_queue_size 100000, topic "".
func DefaultConfig() Config {
	return Config{
		Publisher:    PublisherNull,
		Endpoint:     "tcp://*:5557",
		BufferSteps:  10000,
		HWM:          100000,
		MaxQueueSize: 100000,
	}
}

// Enabled reports whether the configuration publishes at all (publisher "zmq").
func (c Config) Enabled() bool { return c.Publisher == PublisherZMQ }

// ParseConfig parses the --kv-events-config value of an engine ("vllm" or "sglang").
// An empty value is the default (disabled).
//
// vLLM: an unknown key is an error (the simulator does not guess what a misspelt key
// meant); "publisher" left unset becomes "zmq" when enable_kv_cache_events is true, else
// "null"; a "zmq" publisher with events disabled publishes nothing, as vLLM's factory
// returns its no-op publisher then.
//
// SGLang: unknown keys (enable_kv_cache_events among them) are ignored, as its pydantic
// model does; events are published exactly when "publisher" is "zmq".
//
// Errors name the offending key: a publisher other than "null"/"zmq", a negative size,
// an empty endpoint, an endpoint that is not tcp://, ipc:// or inproc://.
func ParseConfig(engine, value string) (Config, error) {
	c := DefaultConfig()
	if strings.TrimSpace(value) == "" {
		return c, nil
	}
	var raw struct {
		Enable         *bool   `json:"enable_kv_cache_events"`
		Publisher      *string `json:"publisher"`
		Endpoint       *string `json:"endpoint"`
		ReplayEndpoint *string `json:"replay_endpoint"`
		BufferSteps    *int    `json:"buffer_steps"`
		HWM            *int    `json:"hwm"`
		MaxQueueSize   *int    `json:"max_queue_size"`
		Topic          *string `json:"topic"`
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(value)))
	switch engine {
	case EngineVLLM:
		dec.DisallowUnknownFields()
	case EngineSGLang:
	default:
		return c, fmt.Errorf("kv-events-config: engine %q: want %q or %q", engine, EngineVLLM, EngineSGLang)
	}
	if err := dec.Decode(&raw); err != nil {
		return c, fmt.Errorf("kv-events-config: %w", err)
	}
	if dec.More() {
		return c, errors.New("kv-events-config: trailing data after the JSON object")
	}
	if engine == EngineVLLM && raw.Enable != nil {
		c.EnableKVCacheEvents = *raw.Enable
	}
	set := func(dst *string, src *string) {
		if src != nil {
			*dst = *src
		}
	}
	set(&c.Endpoint, raw.Endpoint)
	set(&c.ReplayEndpoint, raw.ReplayEndpoint)
	set(&c.Topic, raw.Topic)
	for _, f := range []struct {
		name string
		dst  *int
		src  *int
	}{{"buffer_steps", &c.BufferSteps, raw.BufferSteps}, {"hwm", &c.HWM, raw.HWM}, {"max_queue_size", &c.MaxQueueSize, raw.MaxQueueSize}} {
		if f.src == nil {
			continue
		}
		if *f.src < 0 {
			return c, fmt.Errorf("kv-events-config: %s %d is negative", f.name, *f.src)
		}
		*f.dst = *f.src
	}
	switch {
	case raw.Publisher != nil:
		c.Publisher = *raw.Publisher
	case engine == EngineVLLM && c.EnableKVCacheEvents:
		c.Publisher = PublisherZMQ
	}
	switch c.Publisher {
	case PublisherNull, PublisherZMQ:
	default:
		return c, fmt.Errorf("kv-events-config: publisher %q: want %q or %q", c.Publisher, PublisherNull, PublisherZMQ)
	}
	if engine == EngineVLLM && !c.EnableKVCacheEvents {
		c.Publisher = PublisherNull
	}
	if c.Enabled() {
		if err := checkEndpoint("endpoint", c.Endpoint); err != nil {
			return c, err
		}
		if c.ReplayEndpoint != "" {
			if err := checkEndpoint("replay_endpoint", c.ReplayEndpoint); err != nil {
				return c, err
			}
		}
	}
	return c, nil
}

func checkEndpoint(key, ep string) error {
	switch {
	case strings.HasPrefix(ep, "tcp://"):
		if _, _, err := splitTCP(ep); err != nil {
			return fmt.Errorf("kv-events-config: %s %q: %w", key, ep, err)
		}
		return nil
	case strings.HasPrefix(ep, "ipc://"), strings.HasPrefix(ep, "inproc://"):
		return nil
	}
	return fmt.Errorf("kv-events-config: %s %q: want tcp://host:port, ipc:// or inproc://", key, ep)
}

// splitTCP splits "tcp://host:port" at the last colon (the engines' own split).
func splitTCP(ep string) (base string, port int, err error) {
	i := strings.LastIndexByte(ep, ':')
	if i < len("tcp://") {
		return "", 0, errors.New("no port")
	}
	port, err = strconv.Atoi(ep[i+1:])
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("port %q is not a port number", ep[i+1:])
	}
	return ep[:i], port, nil
}

// OffsetEndpoint is the engines' offset_endpoint_port: data-parallel rank r publishes on
// a tcp endpoint's port + r and on an inproc endpoint suffixed "_dp<r>"; rank 0 and an
// empty endpoint are unchanged. A tcp port 0 (pick a free port, a simulator extension)
// is not offset: every rank then picks its own free port.
func OffsetEndpoint(ep string, rank int) (string, error) {
	if ep == "" || rank == 0 {
		return ep, nil
	}
	switch {
	case strings.Contains(ep, "inproc"):
		return ep + "_dp" + strconv.Itoa(rank), nil
	case strings.Contains(ep, "tcp"):
		base, port, err := splitTCP(ep)
		if err != nil {
			return "", fmt.Errorf("kv events: endpoint %q: %w", ep, err)
		}
		if port == 0 {
			return ep, nil
		}
		if port+rank > 65535 {
			return "", fmt.Errorf("kv events: endpoint %q: port %d + dp rank %d is out of range", ep, port, rank)
		}
		return base + ":" + strconv.Itoa(port+rank), nil
	}
	return "", fmt.Errorf("kv events: endpoint %q: must contain 'inproc' or 'tcp'", ep)
}

// binds is the engines' heuristic for the PUB endpoint: bind a wildcard ("*" or "::")
// or an ipc:// / inproc:// endpoint, connect to anything else.
func binds(ep string) bool {
	return strings.Contains(ep, "*") || strings.Contains(ep, "::") ||
		strings.HasPrefix(ep, "ipc://") || strings.HasPrefix(ep, "inproc://")
}
