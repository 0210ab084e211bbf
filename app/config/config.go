// Package config is the gateway's configuration: one struct filled from `smg launch` flags
// and SMG_* environment variables, with SMG's defaults (smg-spec.md §8, the seed's
// "Configuration"). Validate reports the first bad value naming its flag.
package config

import (
	"github.com/smg-go/smg/domain/pdmode"
	"time"

	"github.com/smg-go/smg/domain/policy"
)

// PrefillSpec is one `--prefill <url> [bootstrap_port|none]` value.
type PrefillSpec struct {
	URL string
	// BootstrapPort is nil for "none" or when the port was omitted.
	BootstrapPort *int
}

// Config holds every setting of `smg launch`. Durations are time.Duration; the flags take
// seconds or milliseconds as their names say.
type Config struct {
	// Server
	Host string // --host, default "0.0.0.0"
	Port int    // --port, default 30000; the PORT env var overrides it (Cloud Run)

	// PD mode and workers
	PDDisaggregation bool           // --pd-disaggregation
	Prefill          []PrefillSpec  // --prefill <url> [port|none], repeatable
	Decode           []string       // --decode <url>, repeatable
	WorkerURLs       []string       // --worker-urls (regular mode)
	DPAware          bool           // --dp-aware
	ModelPath        string         // --model-path (gRPC tokenizer)
	TokenizerPath    string         // --tokenizer-path
	ChatTemplate     string         // --chat-template: template file overriding the model's (gRPC)
	ToolCallParser   string         // --tool-call-parser, "" = by model family (gRPC)
	ReasoningParser  string         // --reasoning-parser, "" = by model family (gRPC)
	TokenizerCache   TokenizerCache // --tokenizer-cache-* (gRPC tokenization cache)

	// EPD (seed "EPD").
	//
	// EPDDisaggregation is --epd-disaggregation: encode-prefill-decode. It implies PD
	// mode: the command line sets PDDisaggregation with it, so everything that reads
	// PDDisaggregation (readiness, the PD router, per-leg policies) applies.
	EPDDisaggregation bool
	// Encode are the --encode <url> [bootstrap_port] workers; BootstrapPort is the encode
	// worker's Mooncake bootstrap port, nil when omitted (8998 is used then).
	Encode []PrefillSpec
	// EncodePolicy is --encode-policy: random, round_robin or consistent_hashing (the
	// default, keyed by each media item's content hash).
	EncodePolicy string

	// Policies
	Policy        string // --policy, default "cache_aware"
	PrefillPolicy string // --prefill-policy, "" = Policy
	DecodePolicy  string // --decode-policy, "" = Policy
	PairingMode   string // --pd-pairing-mode off|lenient|strict, default "lenient"

	// Policy tuning (smg-spec.md §8.2)
	CacheThreshold             float64 // --cache-threshold, 0.3
	BalanceAbsThreshold        int     // --balance-abs-threshold, 64
	BalanceRelThreshold        float64 // --balance-rel-threshold, 1.5
	EvictionIntervalSecs       int     // --eviction-interval, 120
	MaxTreeSize                int     // --max-tree-size, 67108864
	PrefixTokenCount           int     // --prefix-token-count, 256
	PrefixHashLoadFactor       float64 // --prefix-hash-load-factor, 1.25
	MaxIdleSecs                int     // --max-idle-secs, 14400 (manual policy sticky keys)
	LeastLoadKVPressureWeight  float64 // --least-load-kv-pressure-weight, 0.15
	LeastLoadDefaultThroughput float64 // --least-load-default-throughput, 2000
	LeastLoadMeanPrefillTokens int     // --least-load-mean-prefill-tokens, 1024
	LoadMetric                 string  // --load-metric, "requests" (policy.LoadRequests) or "tokens"
	LeastLoadMaxWaitingReqs    int     // --least-load-max-waiting-requests, 0
	// KVEventsRouting (--kv-events-routing, true): subscribe to every grpc:// worker's
	// SubscribeKvEvents stream and let cache_aware score gRPC requests by the engines' own
	// KV-cache view (app/kvroute); false keeps cache_aware on its approximate tree alone.
	KVEventsRouting bool
	// KVOverlapWeight (--kv-overlap-weight, 4): in-flight requests a worker holding the
	// whole prompt's prefix is worth in cache_aware's event-driven cost model.
	KVOverlapWeight float64
	// SelectivePD holds the per-request decode-only thresholds (--selective-pd-*; off).
	SelectivePD pdmode.Config
	// KVSpeculativeTTL (--kv-speculative-ttl-secs, 30 s, fractions allowed): longest life of the entry
	// recorded for a just-routed prompt; it ends sooner, as soon as the worker's own events
	// store the prompt's last block; 0 = none.
	KVSpeculativeTTL time.Duration
	// KVIndexMaxBlocks (--kv-index-max-blocks, 1048576): bound on the KV-event index's
	// (worker, block) entries.
	KVIndexMaxBlocks  int
	RoutingKeyHeaders []string

	// Admission (seed "Decode Admission Window")
	PDAdmissionWait time.Duration // --pd-admission-wait-secs, 30s
	// FlowQueueSize (--flow-queue-size, 256): tenants' requests queued per decode worker on
	// one replica when its window is full; 0: no queue.
	FlowQueueSize int
	// FlowQueueWait (--flow-queue-wait-secs, 30s): deadline of a queued tenant request.
	FlowQueueWait time.Duration
	RedisURL      string // --redis-url / SMG_REDIS_URL; "" = in-memory shared state
	// RedisCluster (--redis-cluster) reads RedisURL as Redis Cluster seed nodes
	// ("redis://h1:p1,h2:p2" or "redis://h1:p1?addr=h2:p2"); several seeds imply it.
	RedisCluster bool
	// MMProcessing is where media of gRPC requests is prepared (--mm-processing):
	// "gateway" (default: fetch, resize, patch and expand placeholders here) or "worker"
	// (the engine takes the media references; seed "Multimodal Requests", "EPD").
	MMProcessing string
	// EngineMaxMessageMB is --engine-max-message-mb, 4: the gRPC receive limit of the
	// engines, in MiB (grpc-go's and grpcio's default MaxRecvMsgSize is 4 MiB; raise it to
	// what the engines are started with). With --mm-processing gateway, a request whose
	// images' pixel values, predicted from their headers, exceed it is refused with 413
	// before any image is decoded. 0 turns the check off.
	EngineMaxMessageMB int
	// MediaMaxConcurrency is --media-max-concurrency, 4: images prepared (decoded, resized,
	// patched) at once by the whole gateway.
	MediaMaxConcurrency int
	// MediaMemoryBudgetMB is --media-memory-budget-mb, 1024: the estimated working memory
	// (from each image's header) of the images being prepared at once, in MiB. An image
	// larger than the whole budget is refused with 413; one that does not fit waits up to
	// MediaBudgetWaitMS and is then shed with 503 and Retry-After.
	MediaMemoryBudgetMB int
	// MediaBudgetWaitMS is --media-budget-wait-ms, 2000: how long an image waits for room in
	// the media budget, in milliseconds, before its request is shed.
	MediaBudgetWaitMS int
	// RedisKeyPrefix starts every Redis key and channel of the shared state
	// (--redis-key-prefix, "smg:"): deployments that share one Redis database keep apart
	// with different prefixes; replicas of one deployment must use the same.
	RedisKeyPrefix string

	// Retries and circuit breaker (smg-spec.md §8.3)
	RetryMaxRetries       int           // --retry-max-retries, 5 (total attempts)
	RetryInitialBackoffMS int           // --retry-initial-backoff-ms, 50
	RetryMaxBackoffMS     int           // --retry-max-backoff-ms, 30000
	RetryBackoffMult      float64       // --retry-backoff-multiplier, 1.5
	RetryJitterFactor     float64       // --retry-jitter-factor, 0.2
	DisableRetries        bool          // --disable-retries
	CBFailureThreshold    int           // --cb-failure-threshold, 10
	CBSuccessThreshold    int           // --cb-success-threshold, 3
	CBTimeout             time.Duration // --cb-timeout-duration-secs, 60s
	CBWindow              time.Duration // --cb-window-duration-secs, 120s (accepted, unused: smg-spec.md §3.6)
	DisableCircuitBreaker bool          // --disable-circuit-breaker
	// CBTimeoutFailureThreshold is how many consecutive unresponsive-leg failures (a leg
	// deadline passed, or the peer engine reported the KV handoff timed out waiting for this
	// worker) open a breaker: --cb-timeout-failure-threshold, 3. A hung worker costs a whole
	// deadline per attempt, so it must leave rotation sooner than one that fails fast.
	CBTimeoutFailureThreshold int
	// CBMaxEjectionPercent caps the share of one leg's pool (prefill, decode) whose breakers
	// may be open or half-open at once: --cb-max-ejection-percent, 50 (Envoy's
	// max_ejection_percent; at least one worker of a leg may always be ejected).
	CBMaxEjectionPercent int

	// Health (smg-spec.md §8.3)
	HealthFailureThreshold int           // --health-failure-threshold, 3
	HealthSuccessThreshold int           // --health-success-threshold, 2
	HealthCheckTimeout     time.Duration // --health-check-timeout-secs, 5s
	HealthCheckInterval    time.Duration // --health-check-interval-secs, 60s
	HealthCheckEndpoint    string        // --health-check-endpoint, "/health"
	DisableHealthCheck     bool          // --disable-health-check
	RemoveUnhealthy        bool          // --remove-unhealthy-workers: drop workers that reach "failed"
	DrainSettle            time.Duration // --drain-settle-secs, 5s: DELETE /workers keeps a ready worker draining this long before removal (smg-spec.md §3.4)

	// Timeouts (smg-spec.md §8.4)
	RequestTimeout time.Duration // --request-timeout-secs, 1800s
	ConnectTimeout time.Duration // --connect-timeout-secs, 10s
	// PrefillTimeout bounds each attempt's prefill leg from its dispatch to its response head
	// (SGLang, parallel) or its complete one-token answer (vLLM, sequential):
	// --prefill-timeout-secs, 330 s; 0 = bounded by RequestTimeout only.
	PrefillTimeout time.Duration
	// FirstByteTimeout bounds a streaming decode leg from its dispatch to its first body
	// byte: --first-byte-timeout-secs, 330 s; 0 = bounded by RequestTimeout only.
	FirstByteTimeout time.Duration
	// DecodeTimeout bounds a non-streaming decode leg from its dispatch to the end of its
	// answer (engines send the head with the complete answer; one that stalls after its
	// head is bounded too): --decode-timeout-secs, 600 s;
	// 0 = bounded by RequestTimeout only.
	DecodeTimeout time.Duration
	// StallTimeout is the ceiling of a worker's stall bound (--stall-timeout-secs, 30 s): a
	// worker whose legs make no progress for its bound (its first-token/inter-token EWMA × 10,
	// clamped to [StallFloor, StallTimeout]) is suspect and gets a canary; 0 turns the
	// progress watchdog off (breakers' half-open canaries still run).
	StallTimeout time.Duration
	// StallFloor is the floor of the stall bound (--stall-floor-secs, 5 s; at most
	// StallTimeout).
	StallFloor time.Duration
	// CanaryTimeout bounds one canary, a 1-token synthetic generate
	// (--canary-timeout-secs, 5 s).
	CanaryTimeout       time.Duration
	ShutdownGracePeriod time.Duration // --shutdown-grace-period-secs, 180s
	ShutdownDrainDelay  time.Duration // --shutdown-drain-delay-secs, 5s: after SIGTERM /readiness answers 503 while new requests are still served this long, then the grace period starts
	MaxPayloadSize      int64         // --max-payload-size, 512 MiB

	// Observability
	PrometheusHost string // --prometheus-host, "0.0.0.0"
	PrometheusPort int    // --prometheus-port, 29000; 0 = serve /metrics on the main port
	LogLevel       string // --log-level, "info"
	LogJSON        bool   // --log-json, default true
	LogFormat      string // --log-format: json, text or cloud; "" follows --log-json
	// LogCloudProject is --log-cloud-project: the Google Cloud project id --log-format cloud
	// writes traces under; "" reads $GOOGLE_CLOUD_PROJECT (adapters/telemetry).
	LogCloudProject string
	// LogFlushIntervalMS is --log-flush-interval-ms, 100: log records are buffered and
	// written to stderr at least this often (WARN and above at once); 0 writes each at once.
	LogFlushIntervalMS int
	// GOGC is --gogc, 400: the garbage collector's target percentage when the GOGC
	// environment variable is not set (the gateway's live heap is a few MB; Go's default of
	// 100 collects about 11 times a second under load). GOMEMLIMIT follows the container's
	// memory limit either way.
	GOGC int
	// MemoryLimitMB is --memory-limit-mb, 0: the Go runtime's soft memory limit in MiB
	// (runtime/debug.SetMemoryLimit). 0 chooses one when GOMEMLIMIT is not set: 90 % of the
	// cgroup (container) memory limit, or else 50 % of the machine's memory. GOMEMLIMIT in
	// the environment wins over both.
	MemoryLimitMB int

	// Request bodies: how long a data-plane client may take to send its body.
	BodyReadTimeout time.Duration // --body-read-timeout-secs, 60s; 408 and the connection closed when passed
	// MaxInflightBodyMB is --max-inflight-body-mb, 128: the request-body bytes (MiB) the
	// data plane holds at once before the responses start. A body's buffer is reserved
	// before it is allocated (as the bytes arrive, never past the Content-Length) and given
	// back when its response head is committed or its request ends; a
	// request that finds the budget full for 2 s is answered 503
	// worker_overload_protection_shed with Retry-After. 0 = unbounded.
	MaxInflightBodyMB int

	// Authentication. Keys are secrets: never logged, compared in constant time.
	AdminAPIKey     string // --admin-api-key / SMG_ADMIN_API_KEY: Bearer key of the worker-management routes; "" = open
	AdminAPIKeyFile string // --admin-api-key-file: file holding the admin key (LoadSecrets reads it)
	APIKey          string // --api-key / SMG_API_KEY: Bearer key of the data-plane routes; "" = open
	// TenantsFile is --tenants-file: a YAML list of tenants (name, priority, api_keys or
	// api_key_sha256, limits), re-read when it changes; "" = no tenants.
	TenantsFile string
	// TenantHeader is --tenant-header: a trusted request header (set by an authenticating
	// proxy) naming the request's tenant; "" = none.
	TenantHeader string

	// Worker registration limits.
	WorkerAllowedHosts []string // --worker-allowed-hosts: host names or CIDRs workers may live on; empty = any (link-local and cloud metadata refused unless listed)
	MaxWorkers         int      // --max-workers, 1024; 0 = no cap
	RegistrationProbes int      // --registration-probe-concurrency, 16: outbound registration probes in flight at once

	// Request ids (smg-spec.md §3.8).
	RequestIDHeaders []string // --request-id-headers: where a client request id is read from, and the only request-id headers forwarded to engines

	// Declarative workers: --workers-file, a YAML or JSON list of POST /workers bodies
	// registered at start-up and kept in step with the file (re-read on change and on
	// SIGHUP); "" = none.
	WorkersFile string
	// ReadyWithoutWorkers is --ready-without-workers: /readiness answers 200 while no worker
	// at all is registered (a gateway started empty, filled later through POST /workers or
	// the workers file); with any worker registered the usual rule applies.
	ReadyWithoutWorkers bool

	// EnableIGW is --enable-igw, SMG's Inference Gateway mode: one gateway serving every
	// model and worker kind (HTTP and gRPC), with workers arriving at runtime. This gateway
	// always runs that way, so the flag is accepted for SMG's command lines; its one
	// documented effect (seed "Per-Phase Policies") is that a leg's power_of_two is not
	// checked against the startup worker count. Service discovery implies it (seed
	// "Kubernetes Service Discovery").
	EnableIGW bool

	// Kubernetes service discovery (seed "Kubernetes Service Discovery", smg-spec.md §10).
	ServiceDiscovery          bool     // --service-discovery: watch pods and register the matching ones
	PrefillSelector           []string // --prefill-selector key=value ...: prefill pods (PD mode)
	DecodeSelector            []string // --decode-selector key=value ...: decode pods (PD mode)
	EncodeSelector            []string // --encode-selector key=value ...: encode pods (PD mode; first in precedence)
	Selector                  []string // --selector key=value ...: regular pods (without --pd-disaggregation)
	ServiceDiscoveryNamespace string   // --service-discovery-namespace; "" = all namespaces
	ServiceDiscoveryPort      int      // --service-discovery-port, 80: the worker port on every pod
}

// Default returns SMG's defaults.
func Default() Config {
	return Config{
		Host:                       "0.0.0.0",
		Port:                       30000,
		Policy:                     "cache_aware",
		EncodePolicy:               "consistent_hashing",
		PairingMode:                "lenient",
		CacheThreshold:             0.3,
		BalanceAbsThreshold:        64,
		BalanceRelThreshold:        1.5,
		EvictionIntervalSecs:       120,
		MaxTreeSize:                67108864,
		PrefixTokenCount:           256,
		PrefixHashLoadFactor:       1.25,
		MaxIdleSecs:                14400,
		LeastLoadKVPressureWeight:  0.15,
		LeastLoadDefaultThroughput: 2000,
		LeastLoadMeanPrefillTokens: 1024,
		KVEventsRouting:            true,
		KVOverlapWeight:            4,
		KVSpeculativeTTL:           30 * time.Second,
		KVIndexMaxBlocks:           1 << 20,
		TokenizerCache:             DefaultTokenizerCache(),
		LoadMetric:                 policy.LoadRequests,
		RoutingKeyHeaders:          []string{"x-smg-routing-key"},
		RedisKeyPrefix:             "smg:",
		PDAdmissionWait:            30 * time.Second,
		FlowQueueSize:              256,
		FlowQueueWait:              30 * time.Second,
		MMProcessing:               MMProcessingGateway,
		EngineMaxMessageMB:         4,
		MediaMaxConcurrency:        4,
		MediaMemoryBudgetMB:        1024,
		MaxInflightBodyMB:          128,
		MediaBudgetWaitMS:          2000,
		RetryMaxRetries:            5,
		RetryInitialBackoffMS:      50,
		RetryMaxBackoffMS:          30000,
		RetryBackoffMult:           1.5,
		RetryJitterFactor:          0.2,
		CBFailureThreshold:         10,
		CBSuccessThreshold:         3,
		CBTimeout:                  60 * time.Second,
		CBWindow:                   120 * time.Second,
		CBTimeoutFailureThreshold:  3,
		CBMaxEjectionPercent:       50,
		HealthFailureThreshold:     3,
		HealthSuccessThreshold:     2,
		HealthCheckTimeout:         5 * time.Second,
		HealthCheckInterval:        60 * time.Second,
		HealthCheckEndpoint:        "/health",
		DrainSettle:                5 * time.Second,
		RequestTimeout:             1800 * time.Second,
		ConnectTimeout:             10 * time.Second,
		PrefillTimeout:             330 * time.Second,
		FirstByteTimeout:           330 * time.Second,
		DecodeTimeout:              600 * time.Second,
		StallTimeout:               30 * time.Second,
		StallFloor:                 5 * time.Second,
		CanaryTimeout:              5 * time.Second,
		ShutdownGracePeriod:        180 * time.Second,
		ShutdownDrainDelay:         5 * time.Second,
		MaxPayloadSize:             512 << 20,
		PrometheusHost:             "0.0.0.0",
		PrometheusPort:             29000,
		LogLevel:                   "info",
		LogJSON:                    true,
		LogFlushIntervalMS:         100,
		GOGC:                       400,
		BodyReadTimeout:            60 * time.Second,
		MaxWorkers:                 1024,
		RegistrationProbes:         16,
		RequestIDHeaders:           []string{"x-request-id", "x-correlation-id", "x-trace-id", "request-id"},
		ServiceDiscoveryPort:       80,
	}
}

// PrefillPolicyName is the prefill leg's policy: --prefill-policy, else --policy.
func (c Config) PrefillPolicyName() string {
	if c.PrefillPolicy != "" {
		return c.PrefillPolicy
	}
	return c.Policy
}

// DecodePolicyName is the decode leg's policy: --decode-policy, else --policy.
func (c Config) DecodePolicyName() string {
	if c.DecodePolicy != "" {
		return c.DecodePolicy
	}
	return c.Policy
}
