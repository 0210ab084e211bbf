package cli

import (
	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// Flag groups, in the order `smg launch --help` shows them.
const (
	groupServer        = "Server"
	groupPD            = "PD disaggregation"
	groupWorkers       = "Workers"
	groupPolicies      = "Policies"
	groupHealth        = "Health checks"
	groupResilience    = "Resilience (retries, circuit breaker)"
	groupTimeouts      = "Timeouts"
	groupObservability = "Observability"
)

var groupOrder = []string{
	groupServer, groupPD, groupWorkers, groupPolicies, groupHealth, groupResilience,
	groupTimeouts, groupObservability,
}

const groupAnnotation = "smg_group"

// launchFlags defines every `smg launch` flag on fs, bound to cfg (which holds the defaults
// on entry). Names and defaults: the seed's "Configuration" and smg-spec.md §8. A
// backquoted word in a usage string is the value placeholder --help shows.
func launchFlags(fs *pflag.FlagSet, cfg *config.Config) {
	var group string
	add := func(name string) { _ = fs.SetAnnotation(name, groupAnnotation, []string{group}) }

	group = groupServer
	fs.StringVar(&cfg.Host, "host", cfg.Host, "address to listen on")
	add("host")
	fs.IntVar(&cfg.Port, "port", cfg.Port, "`port` to listen on; the PORT environment variable overrides it")
	add("port")
	fs.StringVar(&cfg.RedisURL, "redis-url", cfg.RedisURL, "Redis `url` for state shared between gateway replicas (empty: in memory)")
	add("redis-url")
	fs.BoolVar(&cfg.RedisCluster, "redis-cluster", cfg.RedisCluster, "--redis-url names Redis Cluster seed nodes (redis://h1:p1,h2:p2 or redis://h1:p1?addr=h2:p2; several seeds imply it)")
	add("redis-cluster")
	fs.StringVar(&cfg.RedisKeyPrefix, "redis-key-prefix", cfg.RedisKeyPrefix, "prefix of every shared-state key in Redis; two deployments sharing a Redis database need different ones")
	add("redis-key-prefix")
	fs.Int64Var(&cfg.MaxPayloadSize, "max-payload-size", cfg.MaxPayloadSize, "largest request body in `bytes`")
	add("max-payload-size")

	// Edge limits: client bodies, authentication, request ids.
	fs.Var(&secsValue{d: &cfg.BodyReadTimeout}, "body-read-timeout-secs", "how long a client may take to send a data-plane request body (408 and the connection closed after)")
	add("body-read-timeout-secs")
	fs.IntVar(&cfg.MaxInflightBodyMB, "max-inflight-body-mb", cfg.MaxInflightBodyMB, "request-body `MiB` the data plane holds at once until the responses start (each body's buffer is reserved as its bytes arrive, given back when the response head is committed); a request that finds it full for 2 s gets 503 with Retry-After; 0 = unbounded")
	add("max-inflight-body-mb")
	fs.StringVar(&cfg.AdminAPIKey, "admin-api-key", cfg.AdminAPIKey, "require `Authorization: Bearer <key>` on the worker-management routes (/workers) and GET /tenants; prefer SMG_ADMIN_API_KEY or --admin-api-key-file")
	add("admin-api-key")
	fs.StringVar(&cfg.AdminAPIKeyFile, "admin-api-key-file", cfg.AdminAPIKeyFile, "read the admin API key from this `file`")
	add("admin-api-key-file")
	fs.StringVar(&cfg.APIKey, "api-key", cfg.APIKey, "require `Authorization: Bearer <key>` on the data-plane routes (health, readiness, liveness and metrics stay open)")
	add("api-key")
	tenantFlags(fs, cfg, add)
	fs.StringArrayVar(&cfg.RequestIDHeaders, "request-id-headers", cfg.RequestIDHeaders, "request `header` a client request id is read from (first present wins); the only request-id headers forwarded to workers; repeat for more")
	add("request-id-headers")

	group = groupPD
	fs.BoolVar(&cfg.PDDisaggregation, "pd-disaggregation", cfg.PDDisaggregation, "enable prefill/decode disaggregation")
	add("pd-disaggregation")
	fs.Var(&prefillValue{specs: &cfg.Prefill}, "prefill", "prefill worker `url`, optionally followed by its bootstrap port or none; repeat per worker")
	add("prefill")
	fs.StringArrayVar(&cfg.Decode, "decode", cfg.Decode, "decode worker `url`; repeat per worker")
	add("decode")
	fs.BoolVar(&cfg.EPDDisaggregation, "epd-disaggregation", cfg.EPDDisaggregation, "enable encode/prefill/decode disaggregation (gRPC TokenSpeed workers; instead of --pd-disaggregation)")
	add("epd-disaggregation")
	fs.Var(&prefillValue{specs: &cfg.Encode}, "encode", "EPD encode worker `url`, optionally followed by its Mooncake bootstrap port (8998 when omitted); repeat per worker")
	add("encode")
	fs.StringVar(&cfg.EncodePolicy, "encode-policy", cfg.EncodePolicy, "EPD encode-leg `policy`: random, round_robin or consistent_hashing (by each media item's content hash)")
	add("encode-policy")
	fs.StringVar(&cfg.PairingMode, "pd-pairing-mode", cfg.PairingMode, "how strictly legs must share a KV transfer protocol: off, lenient or strict")
	add("pd-pairing-mode")
	fs.Var(&secsValue{d: &cfg.PDAdmissionWait}, "pd-admission-wait-secs", "how long a dispatch waits for a free slot in the decode worker's running window (max_running_requests) before it is shed with 503 (0 sheds at once)")
	add("pd-admission-wait-secs")
	flowQueueFlags(fs, cfg, add)
	fs.StringVar(&cfg.MMProcessing, "mm-processing", cfg.MMProcessing, "where gRPC requests' media is prepared: gateway (fetch, resize, patch, expand placeholders) or worker (the engine takes the media references)")
	add("mm-processing")
	fs.IntVar(&cfg.EngineMaxMessageMB, "engine-max-message-mb", cfg.EngineMaxMessageMB, "the engines' gRPC receive limit in `MiB`: a request whose images' pixel values (predicted from their headers) exceed it is refused with 413 before decoding; 0 = no check")
	add("engine-max-message-mb")
	fs.IntVar(&cfg.MediaMaxConcurrency, "media-max-concurrency", cfg.MediaMaxConcurrency, "`images` the gateway prepares (decodes, resizes, patches) at once")
	add("media-max-concurrency")
	fs.IntVar(&cfg.MediaMemoryBudgetMB, "media-memory-budget-mb", cfg.MediaMemoryBudgetMB, "estimated working memory in `MiB` of the images prepared at once; an image larger than all of it gets 413, one that does not fit in time 503 with Retry-After")
	add("media-memory-budget-mb")
	fs.IntVar(&cfg.MediaBudgetWaitMS, "media-budget-wait-ms", cfg.MediaBudgetWaitMS, "how long in `ms` an image waits for room in the media budget before its request is shed with 503")
	add("media-budget-wait-ms")

	group = groupWorkers
	fs.StringArrayVar(&cfg.WorkerURLs, "worker-urls", cfg.WorkerURLs, "regular (non-PD) worker `url`; repeat per worker")
	add("worker-urls")
	fs.StringVar(&cfg.WorkersFile, "workers-file", cfg.WorkersFile, "YAML or JSON `file` listing workers as POST /workers bodies (kv_connector, labels and all); registered at start-up, re-read on change and on SIGHUP")
	add("workers-file")
	fs.BoolVar(&cfg.ReadyWithoutWorkers, "ready-without-workers", cfg.ReadyWithoutWorkers, "/readiness answers 200 while no worker at all is registered (a gateway started empty, to be filled through POST /workers), so Kubernetes readiness and `helm install --wait` pass; with any worker registered the usual rule applies")
	add("ready-without-workers")
	fs.BoolVar(&cfg.EnableIGW, "enable-igw", cfg.EnableIGW, "SMG's Inference Gateway mode: every model and worker kind through one gateway, workers registered at runtime (this gateway always runs so); a leg's power_of_two is then not checked against the startup workers")
	add("enable-igw")
	fs.BoolVar(&cfg.ServiceDiscovery, "service-discovery", cfg.ServiceDiscovery, "register Kubernetes pods matching the role selectors (Running, Ready, with a pod IP) as workers, and drain them when they go")
	add("service-discovery")
	fs.StringArrayVar(&cfg.PrefillSelector, "prefill-selector", cfg.PrefillSelector, "label `key=value` pairs of prefill pods (several may follow the flag)")
	add("prefill-selector")
	fs.StringArrayVar(&cfg.DecodeSelector, "decode-selector", cfg.DecodeSelector, "label `key=value` pairs of decode pods (several may follow the flag)")
	add("decode-selector")
	fs.StringArrayVar(&cfg.EncodeSelector, "encode-selector", cfg.EncodeSelector, "label `key=value` pairs of encode pods (several may follow the flag)")
	add("encode-selector")
	fs.StringArrayVar(&cfg.Selector, "selector", cfg.Selector, "label `key=value` pairs of regular pods, without --pd-disaggregation (several may follow the flag)")
	add("selector")
	fs.StringVar(&cfg.ServiceDiscoveryNamespace, "service-discovery-namespace", cfg.ServiceDiscoveryNamespace, "`namespace` to watch (empty: all namespaces)")
	add("service-discovery-namespace")
	fs.IntVar(&cfg.ServiceDiscoveryPort, "service-discovery-port", cfg.ServiceDiscoveryPort, "worker `port` on every discovered pod")
	add("service-discovery-port")
	fs.BoolVar(&cfg.DPAware, "dp-aware", cfg.DPAware, "register one worker per data-parallel rank")
	add("dp-aware")
	fs.StringVar(&cfg.ModelPath, "model-path", cfg.ModelPath, "gRPC: tokenizer/model `path` loaded at start-up")
	add("model-path")
	fs.StringVar(&cfg.TokenizerPath, "tokenizer-path", cfg.TokenizerPath, "gRPC: tokenizer `path` (overrides --model-path for the tokenizer)")
	add("tokenizer-path")
	fs.StringVar(&cfg.ChatTemplate, "chat-template", cfg.ChatTemplate, "gRPC: chat template `file` (Jinja2) used instead of the model's")
	add("chat-template")
	fs.StringVar(&cfg.ToolCallParser, "tool-call-parser", cfg.ToolCallParser, "gRPC: tool-call `parser` for model output: qwen or llama (default: by model family)")
	add("tool-call-parser")
	fs.StringVar(&cfg.ReasoningParser, "reasoning-parser", cfg.ReasoningParser, "gRPC: reasoning `parser` for model output: qwen3, qwen3-thinking or deepseek-r1 (default: by model family)")
	add("reasoning-parser")
	tokenizerCacheFlags(fs, cfg, add)

	// Registration limits.
	fs.StringArrayVar(&cfg.WorkerAllowedHosts, "worker-allowed-hosts", cfg.WorkerAllowedHosts, "worker `host` name, IP or CIDR registrations may use (empty: any host but link-local and cloud metadata addresses, which must be listed here); repeat for more")
	add("worker-allowed-hosts")
	fs.IntVar(&cfg.MaxWorkers, "max-workers", cfg.MaxWorkers, "most workers registered at once (0: no cap)")
	add("max-workers")
	fs.IntVar(&cfg.RegistrationProbes, "registration-probe-concurrency", cfg.RegistrationProbes, "most outbound registration probes (health, detection) in flight at once")
	add("registration-probe-concurrency")

	group = groupPolicies
	fs.StringVar(&cfg.Policy, "policy", cfg.Policy, "routing `policy`: random, round_robin, cache_aware, power_of_two, least_load, prefix_hash, consistent_hashing, manual, bucket")
	add("policy")
	fs.StringVar(&cfg.PrefillPolicy, "prefill-policy", cfg.PrefillPolicy, "prefill-leg `policy` (default: --policy)")
	add("prefill-policy")
	fs.StringVar(&cfg.DecodePolicy, "decode-policy", cfg.DecodePolicy, "decode-leg `policy` (default: --policy; bucket is not allowed)")
	add("decode-policy")
	fs.Float64Var(&cfg.CacheThreshold, "cache-threshold", cfg.CacheThreshold, "cache_aware: prefix match rate (0-1) above which the matching worker is kept")
	add("cache-threshold")
	fs.IntVar(&cfg.BalanceAbsThreshold, "balance-abs-threshold", cfg.BalanceAbsThreshold, "cache_aware/bucket: absolute load gap that triggers balancing")
	add("balance-abs-threshold")
	fs.Float64Var(&cfg.BalanceRelThreshold, "balance-rel-threshold", cfg.BalanceRelThreshold, "cache_aware/bucket: relative load ratio (>= 1) that triggers balancing")
	add("balance-rel-threshold")
	fs.IntVar(&cfg.EvictionIntervalSecs, "eviction-interval", cfg.EvictionIntervalSecs, "cache_aware/manual: eviction interval in `seconds`")
	add("eviction-interval")
	fs.IntVar(&cfg.MaxTreeSize, "max-tree-size", cfg.MaxTreeSize, "cache_aware: prefix tree budget per model (characters)")
	add("max-tree-size")
	fs.IntVar(&cfg.PrefixTokenCount, "prefix-token-count", cfg.PrefixTokenCount, "prefix_hash: tokens hashed for the routing key")
	add("prefix-token-count")
	fs.Float64Var(&cfg.PrefixHashLoadFactor, "prefix-hash-load-factor", cfg.PrefixHashLoadFactor, "prefix_hash: load factor (>= 1) above which the ring target is skipped")
	add("prefix-hash-load-factor")
	fs.IntVar(&cfg.MaxIdleSecs, "max-idle-secs", cfg.MaxIdleSecs, "manual: sticky keys idle this many `seconds` are evicted")
	add("max-idle-secs")
	fs.Float64Var(&cfg.LeastLoadKVPressureWeight, "least-load-kv-pressure-weight", cfg.LeastLoadKVPressureWeight, "least_load: weight of KV-cache pressure in the score")
	add("least-load-kv-pressure-weight")
	loadRoutingFlags(fs, cfg, add)
	selectivePDFlags(fs, cfg, add)
	fs.StringArrayVar(&cfg.RoutingKeyHeaders, "routing-key-headers", cfg.RoutingKeyHeaders, "request `header` carrying the routing key; repeat for more")
	add("routing-key-headers")

	group = groupHealth
	fs.IntVar(&cfg.HealthFailureThreshold, "health-failure-threshold", cfg.HealthFailureThreshold, "consecutive failed probes that make a ready worker not ready")
	add("health-failure-threshold")
	fs.IntVar(&cfg.HealthSuccessThreshold, "health-success-threshold", cfg.HealthSuccessThreshold, "consecutive good probes that make a worker ready")
	add("health-success-threshold")
	fs.Var(&secsValue{d: &cfg.HealthCheckTimeout}, "health-check-timeout-secs", "probe timeout")
	add("health-check-timeout-secs")
	fs.Var(&secsValue{d: &cfg.HealthCheckInterval}, "health-check-interval-secs", "time between probes of one worker")
	add("health-check-interval-secs")
	fs.StringVar(&cfg.HealthCheckEndpoint, "health-check-endpoint", cfg.HealthCheckEndpoint, "worker `path` probed with GET")
	add("health-check-endpoint")
	fs.BoolVar(&cfg.DisableHealthCheck, "disable-health-check", cfg.DisableHealthCheck, "never probe workers; they are ready once registered")
	add("disable-health-check")
	fs.BoolVar(&cfg.RemoveUnhealthy, "remove-unhealthy-workers", cfg.RemoveUnhealthy, "unregister workers that reach the failed state")
	add("remove-unhealthy-workers")
	fs.Var(&secsValue{d: &cfg.DrainSettle}, "drain-settle-secs", "DELETE /workers keeps a ready worker draining this long before removal")
	add("drain-settle-secs")

	group = groupResilience
	fs.IntVar(&cfg.RetryMaxRetries, "retry-max-retries", cfg.RetryMaxRetries, "total attempts per request, first included (>= 1)")
	add("retry-max-retries")
	fs.IntVar(&cfg.RetryInitialBackoffMS, "retry-initial-backoff-ms", cfg.RetryInitialBackoffMS, "first retry backoff in `ms`")
	add("retry-initial-backoff-ms")
	fs.IntVar(&cfg.RetryMaxBackoffMS, "retry-max-backoff-ms", cfg.RetryMaxBackoffMS, "largest retry backoff in `ms`")
	add("retry-max-backoff-ms")
	fs.Float64Var(&cfg.RetryBackoffMult, "retry-backoff-multiplier", cfg.RetryBackoffMult, "backoff growth per attempt (>= 1)")
	add("retry-backoff-multiplier")
	fs.Float64Var(&cfg.RetryJitterFactor, "retry-jitter-factor", cfg.RetryJitterFactor, "random jitter share of each backoff (0-1)")
	add("retry-jitter-factor")
	fs.BoolVar(&cfg.DisableRetries, "disable-retries", cfg.DisableRetries, "send every request once")
	add("disable-retries")
	fs.IntVar(&cfg.CBFailureThreshold, "cb-failure-threshold", cfg.CBFailureThreshold, "consecutive failures that open a worker's circuit breaker")
	add("cb-failure-threshold")
	fs.IntVar(&cfg.CBSuccessThreshold, "cb-success-threshold", cfg.CBSuccessThreshold, "consecutive half-open successes that close it again")
	add("cb-success-threshold")
	fs.Var(&secsValue{d: &cfg.CBTimeout}, "cb-timeout-duration-secs", "how long an open breaker waits before half-open")
	add("cb-timeout-duration-secs")
	fs.Var(&secsValue{d: &cfg.CBWindow}, "cb-window-duration-secs", "accepted for compatibility; the breaker counts consecutive outcomes")
	add("cb-window-duration-secs")
	fs.BoolVar(&cfg.DisableCircuitBreaker, "disable-circuit-breaker", cfg.DisableCircuitBreaker, "never open circuit breakers")
	add("disable-circuit-breaker")
	fs.IntVar(&cfg.CBTimeoutFailureThreshold, "cb-timeout-failure-threshold", cfg.CBTimeoutFailureThreshold, "consecutive unresponsive-leg failures (leg deadline passed, or the peer's KV handoff timed out waiting) that open a worker's breaker")
	add("cb-timeout-failure-threshold")
	fs.IntVar(&cfg.CBMaxEjectionPercent, "cb-max-ejection-percent", cfg.CBMaxEjectionPercent, "largest share of a leg's workers whose breakers may be open at once (1-100; at least one worker)")
	add("cb-max-ejection-percent")

	group = groupTimeouts
	fs.Var(&secsValue{d: &cfg.RequestTimeout}, "request-timeout-secs", "whole-request deadline, both legs included")
	add("request-timeout-secs")
	fs.Var(&secsValue{d: &cfg.ConnectTimeout}, "connect-timeout-secs", "TCP connect timeout to workers")
	add("connect-timeout-secs")
	fs.Var(&secsValue{d: &cfg.PrefillTimeout}, "prefill-timeout-secs", "per attempt: prefill dispatch to its response head (SGLang) or whole one-token answer (vLLM); 0: only --request-timeout-secs")
	add("prefill-timeout-secs")
	fs.Var(&secsValue{d: &cfg.FirstByteTimeout}, "first-byte-timeout-secs", "per attempt: streaming decode dispatch to its first body byte (0: only --request-timeout-secs)")
	add("first-byte-timeout-secs")
	fs.Var(&secsValue{d: &cfg.StallTimeout}, "stall-timeout-secs", "ceiling of a worker's stall bound: legs without progress that long make it suspect until a canary answers (0: watchdog off)")
	add("stall-timeout-secs")
	fs.Var(&secsValue{d: &cfg.StallFloor}, "stall-floor-secs", "floor of a worker's stall bound (its first-token/inter-token average × 10, clamped)")
	add("stall-floor-secs")
	fs.Var(&secsValue{d: &cfg.CanaryTimeout}, "canary-timeout-secs", "deadline of one canary (a 1-token synthetic generate that confirms a suspect worker or probes a half-open breaker)")
	add("canary-timeout-secs")
	fs.Var(&secsValue{d: &cfg.DecodeTimeout}, "decode-timeout-secs", "per attempt: non-streaming decode dispatch to its answer (0: only --request-timeout-secs)")
	add("decode-timeout-secs")
	fs.Var(&secsValue{d: &cfg.ShutdownDrainDelay}, "shutdown-drain-delay-secs", "on SIGTERM, /readiness answers 503 at once but new requests are still served this long, while load balancers withdraw the endpoint; then the listener closes")
	add("shutdown-drain-delay-secs")
	fs.Var(&secsValue{d: &cfg.ShutdownGracePeriod}, "shutdown-grace-period-secs", "after the drain delay, how long in-flight requests may finish; then they are cut with 503 server_shutting_down and smg exits 3")
	add("shutdown-grace-period-secs")

	group = groupObservability
	fs.StringVar(&cfg.PrometheusHost, "prometheus-host", cfg.PrometheusHost, "address of the /metrics listener")
	add("prometheus-host")
	fs.IntVar(&cfg.PrometheusPort, "prometheus-port", cfg.PrometheusPort, "`port` of the /metrics listener; 0 serves /metrics on --port")
	add("prometheus-port")
	fs.StringVar(&cfg.LogLevel, "log-level", cfg.LogLevel, "debug, info, warn or error")
	add("log-level")
	fs.BoolVar(&cfg.LogJSON, "log-json", cfg.LogJSON, "JSON log lines (--log-json=false: text)")
	add("log-json")
	fs.StringVar(&cfg.LogFormat, "log-format", cfg.LogFormat, "json, text, or cloud (JSON with severity and message keys, for Cloud Logging and CloudWatch); overrides --log-json")
	add("log-format")
	fs.StringVar(&cfg.LogCloudProject, "log-cloud-project", cfg.LogCloudProject, "Google Cloud project `id` for --log-format cloud's logging.googleapis.com/trace (projects/<id>/traces/<trace id>); default $GOOGLE_CLOUD_PROJECT, else the bare trace id")
	add("log-cloud-project")
	fs.IntVar(&cfg.LogFlushIntervalMS, "log-flush-interval-ms", cfg.LogFlushIntervalMS, "log records are buffered and written to stderr at least every this many `ms` (WARN and ERROR at once, the rest at shutdown); 0 writes each record at once")
	add("log-flush-interval-ms")
	fs.IntVar(&cfg.GOGC, "gogc", cfg.GOGC, "garbage collector target `percent` when GOGC is not set in the environment (GOGC wins); see --memory-limit-mb for GOMEMLIMIT")
	add("gogc")
	fs.IntVar(&cfg.MemoryLimitMB, "memory-limit-mb", cfg.MemoryLimitMB, "the Go runtime's soft memory limit in `MiB`; 0 = 90% of the container (cgroup) memory limit, or else 50% of the machine's memory; GOMEMLIMIT in the environment wins")
	add("memory-limit-mb")
}
