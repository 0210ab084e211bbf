package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// FlagError is a bad configuration value, named by the `smg launch` flag that sets it.
// Error() is one line: `invalid value for --port: must be between 0 and 65535 (got 70000)`.
type FlagError struct {
	// Flag is the flag name with its leading dashes, e.g. "--port".
	Flag string
	// Reason says what is wrong and what is accepted.
	Reason string
}

// Error implements error.
func (e *FlagError) Error() string {
	return "invalid value for " + e.Flag + ": " + e.Reason
}

// PolicyNames are the per-leg routing policies accepted by --policy, --prefill-policy and
// --decode-policy (smg-spec.md §5.0, §8.1; the seed's "Per-Phase Policies"): the policy
// registry's names (domain/policy.Names), in its order.
var PolicyNames = policy.Names()

// EncodePolicyNames are the values of --encode-policy (seed "EPD").
var EncodePolicyNames = []string{wire.PolicyRandom, wire.PolicyRoundRobin, wire.PolicyConsistentHashing}

// PairingModes are the values of --pd-pairing-mode (seed "Pairing Modes").
var PairingModes = []string{wire.PairingModeOff, wire.PairingModeLenient, wire.PairingModeStrict}

// LogLevels are the values of --log-level.
var LogLevels = []string{"debug", "info", "warn", "error"}

// Validate checks every setting and returns the first problem as a *FlagError naming the
// flag (nil when the configuration is usable). Rules: smg-spec.md §8.6 (URLs, bootstrap
// ports 1..65535, retry/circuit-breaker ranges of §8.3), §5.3 (power_of_two needs ≥ 2
// startup workers on its leg when any are listed), §5.6 (no bucket decode policy) — both
// through the policy registry (domain/policy.ValidateStartup) in PD mode, where a bucket
// decode leg is refused whether set by --decode-policy or inherited from --policy (the seed's
// "Per-Phase Policies": rejected as a decode policy at startup; older SMG let an inherited
// one through, which here would fail later at start with an fx error) — the seed's
// "Supported Engines" (no ipc:// prefill or decode workers). Port 0 is accepted and binds a
// free port (tests); --prometheus-port 0 serves /metrics on the main port.
func (c Config) Validate() error {
	for _, check := range []func() error{
		c.validateServer, c.validateWorkers, c.validatePolicies, c.validatePolicyTuning,
		c.validateResilience, c.validateHealth, c.validateTimeouts, c.validateObservability,
		c.validateEdge,
		c.validateText,
		c.validateDiscovery,
		c.validateSelectivePD,
	} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

func bad(flag, format string, args ...any) error {
	return &FlagError{Flag: flag, Reason: fmt.Sprintf(format, args...)}
}

func (c Config) validateServer() error {
	if strings.TrimSpace(c.Host) == "" {
		return bad("--host", "must not be empty (e.g. 0.0.0.0 or 127.0.0.1)")
	}
	if c.Port < 0 || c.Port > 65535 {
		return bad("--port", "must be between 0 and 65535 (got %d)", c.Port)
	}
	if c.RedisURL != "" && (c.RedisCluster || isRedisClusterURL(c.RedisURL)) {
		if err := redisClusterURL(c.RedisURL); err != nil {
			return bad("--redis-url", "%s", err)
		}
	} else if c.RedisURL != "" {
		u, err := url.Parse(c.RedisURL)
		if err != nil {
			return bad("--redis-url", "must be a redis://, rediss:// or unix:// URL (it does not parse)")
		}
		if u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix" {
			return bad("--redis-url", "must be a redis://, rediss:// or unix:// URL (got %q)", redactURL(u))
		}
		if err := redisDB(u); err != nil {
			return bad("--redis-url", "%s (got %q)", err, redactURL(u))
		}
	} else if c.RedisCluster {
		return bad("--redis-cluster", "needs --redis-url (the cluster's seed nodes)")
	}
	if strings.TrimSpace(c.RedisKeyPrefix) == "" || strings.ContainsAny(c.RedisKeyPrefix, " \t\r\n") {
		return bad("--redis-key-prefix", "must be a non-empty prefix without white space (got %q)", c.RedisKeyPrefix)
	}
	return nil
}

func (c Config) validateWorkers() error {
	if !c.EPDDisaggregation && len(c.Encode) > 0 {
		return bad("--encode", "needs --epd-disaggregation")
	}
	if !c.PDDisaggregation && !c.EPDDisaggregation {
		if len(c.Prefill) > 0 {
			return bad("--prefill", "needs --pd-disaggregation")
		}
		if len(c.Decode) > 0 {
			return bad("--decode", "needs --pd-disaggregation")
		}
	}
	for _, p := range c.Prefill {
		if err := validatePDWorkerURL("--prefill", p.URL); err != nil {
			return err
		}
		if p.BootstrapPort != nil && (*p.BootstrapPort < 1 || *p.BootstrapPort > 65535) {
			return bad("--prefill", "%s: bootstrap port must be between 1 and 65535 (got %d)", p.URL, *p.BootstrapPort)
		}
	}
	for _, d := range c.Decode {
		if err := validatePDWorkerURL("--decode", d); err != nil {
			return err
		}
	}
	for _, e := range c.Encode {
		if err := validatePDWorkerURL("--encode", e.URL); err != nil {
			return err
		}
		if e.BootstrapPort != nil && (*e.BootstrapPort < 1 || *e.BootstrapPort > 65535) {
			return bad("--encode", "%s: bootstrap port must be between 1 and 65535 (got %d)", e.URL, *e.BootstrapPort)
		}
	}
	for _, u := range c.WorkerURLs {
		if _, err := worker.ValidateURL(u); err != nil {
			return bad("--worker-urls", "%s", stripInvalidURL(err))
		}
	}
	return c.validateEPDWorkers()
}

// validateEPDWorkers refuses an EPD router for HTTP workers (seed "EPD": EPD requires gRPC
// workers running TokenSpeed; SMG refuses to start an EPD router for HTTP workers), and
// --worker-urls, which EPD has no use for.
func (c Config) validateEPDWorkers() error {
	if !c.EPDDisaggregation {
		return nil
	}
	if len(c.WorkerURLs) > 0 {
		return bad("--epd-disaggregation", "EPD routes encode, prefill and decode workers; --worker-urls is not accepted with it")
	}
	type listed struct{ flag, url string }
	var all []listed
	for _, e := range c.Encode {
		all = append(all, listed{"--encode", e.URL})
	}
	for _, p := range c.Prefill {
		all = append(all, listed{"--prefill", p.URL})
	}
	for _, d := range c.Decode {
		all = append(all, listed{"--decode", d})
	}
	for _, l := range all {
		if mode, _ := worker.ValidateURL(l.url); mode != worker.ConnGRPC {
			return bad("--epd-disaggregation", "EPD needs gRPC workers running TokenSpeed, but %s %s is an HTTP worker", l.flag, worker.RedactURL(l.url))
		}
	}
	return nil
}

// validatePDWorkerURL checks a --prefill/--decode URL; ipc:// (ZMQ) workers cannot be PD legs
// because the ZMQ wire carries no KV-transfer metadata (seed "Supported Engines").
func validatePDWorkerURL(flag, raw string) error {
	mode, err := worker.ValidateURL(raw)
	if err != nil {
		return bad(flag, "%s", stripInvalidURL(err))
	}
	if mode == worker.ConnZMQ {
		return bad(flag, "%s: ipc:// workers cannot be prefill or decode workers: the ZMQ wire carries no KV-transfer metadata", raw)
	}
	return nil
}

func stripInvalidURL(err error) string {
	msg := err.Error()
	if errors.Is(err, worker.ErrInvalidURL) {
		msg = strings.TrimPrefix(msg, worker.ErrInvalidURL.Error()+": ")
	}
	return msg
}

func (c Config) validatePolicies() error {
	for _, p := range []struct{ flag, name string }{
		{"--policy", c.Policy}, {"--prefill-policy", c.PrefillPolicy}, {"--decode-policy", c.DecodePolicy},
	} {
		if p.name == "" && p.flag != "--policy" {
			continue
		}
		if !contains(PolicyNames, p.name) {
			return bad(p.flag, "unknown policy %q (expected one of %s)", p.name, strings.Join(PolicyNames, ", "))
		}
	}
	if c.PDDisaggregation {
		// With service discovery or --enable-igw the workers arrive later: only the leg rule
		// applies (seed "Per-Phase Policies").
		prefills, decodes := len(c.Prefill), len(c.Decode)
		if c.ServiceDiscovery || c.EnableIGW {
			prefills, decodes = 0, 0
		}
		if err := legStartup(c.PrefillPolicyName(), policy.LegPrefill, prefills); err != nil {
			return bad(policyFlag(c.PrefillPolicy, "--prefill-policy"), "%s", err)
		}
		if err := legStartup(c.DecodePolicyName(), policy.LegDecode, decodes); err != nil {
			return bad(policyFlag(c.DecodePolicy, "--decode-policy"), "%s", err)
		}
	}
	if !contains(EncodePolicyNames, c.EncodePolicy) {
		return bad("--encode-policy", "unknown policy %q (expected random, round_robin or consistent_hashing)", c.EncodePolicy)
	}
	if !contains(PairingModes, c.PairingMode) {
		return bad("--pd-pairing-mode", "unknown mode %q (expected off, lenient or strict)", c.PairingMode)
	}
	if c.PDAdmissionWait < 0 {
		return bad("--pd-admission-wait-secs", "must be 0 or more seconds (got %s)", secs(c.PDAdmissionWait))
	}
	if c.FlowQueueSize < 0 {
		return bad("--flow-queue-size", "must be 0 (no queue) or more requests (got %d)", c.FlowQueueSize)
	}
	if c.FlowQueueWait < 0 {
		return bad("--flow-queue-wait-secs", "must be 0 or more seconds (got %s)", secs(c.FlowQueueWait))
	}
	if c.MMProcessing != MMProcessingGateway && c.MMProcessing != MMProcessingWorker {
		return bad("--mm-processing", "unknown mode %q (expected gateway or worker)", c.MMProcessing)
	}
	switch {
	case c.EngineMaxMessageMB < 0:
		return bad("--engine-max-message-mb", "must be 0 (no check) or more MiB (got %d)", c.EngineMaxMessageMB)
	case c.MediaMaxConcurrency < 1:
		return bad("--media-max-concurrency", "must be 1 or more images (got %d)", c.MediaMaxConcurrency)
	case c.MediaMemoryBudgetMB < 1:
		return bad("--media-memory-budget-mb", "must be 1 or more MiB (got %d)", c.MediaMemoryBudgetMB)
	case c.MediaBudgetWaitMS < 0:
		return bad("--media-budget-wait-ms", "must be 0 or more ms (got %d)", c.MediaBudgetWaitMS)
	}
	return nil
}

// legStartup is the policy registry's start-up check of one PD leg (domain/policy
// ValidateStartup: bucket never routes the decode leg, power_of_two needs two startup
// workers), returned without the sentinel's prefix so that the FlagError reads as one
// sentence. A leg with no startup workers gets their arrival later (POST /workers), so only
// the leg rule applies to it (seed "Per-Phase Policies": the worker count is checked at
// startup).
func legStartup(name string, leg policy.Leg, startupWorkers int) error {
	var err error
	if startupWorkers == 0 {
		err = policy.CheckLeg(name, leg)
	} else {
		err = policy.ValidateStartup(name, leg, startupWorkers)
	}
	if err == nil {
		return nil
	}
	msg := err.Error()
	for _, sentinel := range []error{policy.ErrPolicyLeg, policy.ErrTooFewWorkers, policy.ErrUnknownPolicy} {
		if errors.Is(err, sentinel) {
			msg = strings.TrimPrefix(msg, sentinel.Error()+": ")
		}
	}
	return errors.New(msg)
}

func policyFlag(legPolicy, legFlag string) string {
	if legPolicy != "" {
		return legFlag
	}
	return "--policy"
}

func (c Config) validatePolicyTuning() error {
	// The policy registry owns the ranges (domain/policy.Options.Validate); a violation is
	// reported here under its flag.
	if err := c.PolicyOptions().Validate(); err != nil {
		var oe *policy.OptionError
		if errors.As(err, &oe) {
			return bad(oe.Flag, "%s", oe.Reason)
		}
		return err
	}
	if c.KVSpeculativeTTL < 0 {
		return bad("--kv-speculative-ttl-secs", "must be 0 (none) or more (got %s)", c.KVSpeculativeTTL)
	}
	if c.KVIndexMaxBlocks < 0 {
		return bad("--kv-index-max-blocks", "must be 1 or more, or 0 for the default (got %d)", c.KVIndexMaxBlocks)
	}
	for _, h := range c.RoutingKeyHeaders {
		if strings.TrimSpace(h) == "" || strings.ContainsAny(h, " \t:") {
			return bad("--routing-key-headers", "%q is not a header name", h)
		}
	}
	return nil
}

func (c Config) validateResilience() error {
	switch {
	case c.RetryMaxRetries < 1:
		return bad("--retry-max-retries", "must be 1 or more total attempts (got %d)", c.RetryMaxRetries)
	case c.RetryInitialBackoffMS <= 0:
		return bad("--retry-initial-backoff-ms", "must be more than 0 ms (got %d)", c.RetryInitialBackoffMS)
	case c.RetryMaxBackoffMS < c.RetryInitialBackoffMS:
		return bad("--retry-max-backoff-ms", "must be at least --retry-initial-backoff-ms (%d ms; got %d)", c.RetryInitialBackoffMS, c.RetryMaxBackoffMS)
	case !finite(c.RetryBackoffMult) || c.RetryBackoffMult < 1:
		return bad("--retry-backoff-multiplier", "must be 1 or more (got %g)", c.RetryBackoffMult)
	case !finite(c.RetryJitterFactor) || c.RetryJitterFactor < 0 || c.RetryJitterFactor > 1:
		return bad("--retry-jitter-factor", "must be between 0 and 1 (got %g)", c.RetryJitterFactor)
	case c.CBFailureThreshold < 1:
		return bad("--cb-failure-threshold", "must be 1 or more (got %d)", c.CBFailureThreshold)
	case c.CBSuccessThreshold < 1:
		return bad("--cb-success-threshold", "must be 1 or more (got %d)", c.CBSuccessThreshold)
	case c.CBTimeout <= 0:
		return bad("--cb-timeout-duration-secs", "must be more than 0 seconds (got %s)", secs(c.CBTimeout))
	case c.CBWindow <= 0:
		return bad("--cb-window-duration-secs", "must be more than 0 seconds (got %s)", secs(c.CBWindow))
	case c.CBTimeoutFailureThreshold < 1:
		return bad("--cb-timeout-failure-threshold", "must be 1 or more (got %d)", c.CBTimeoutFailureThreshold)
	case c.CBMaxEjectionPercent < 1 || c.CBMaxEjectionPercent > 100:
		return bad("--cb-max-ejection-percent", "must be between 1 and 100 (got %d)", c.CBMaxEjectionPercent)
	}
	return nil
}

func (c Config) validateHealth() error {
	switch {
	case c.HealthFailureThreshold < 1:
		return bad("--health-failure-threshold", "must be 1 or more (got %d)", c.HealthFailureThreshold)
	case c.HealthSuccessThreshold < 1:
		return bad("--health-success-threshold", "must be 1 or more (got %d)", c.HealthSuccessThreshold)
	case c.HealthCheckTimeout <= 0:
		return bad("--health-check-timeout-secs", "must be more than 0 seconds (got %s)", secs(c.HealthCheckTimeout))
	case c.HealthCheckInterval <= 0:
		return bad("--health-check-interval-secs", "must be more than 0 seconds (got %s)", secs(c.HealthCheckInterval))
	case !strings.HasPrefix(c.HealthCheckEndpoint, "/"):
		return bad("--health-check-endpoint", "must be a path starting with / (got %q)", c.HealthCheckEndpoint)
	case c.DrainSettle < 0:
		return bad("--drain-settle-secs", "must be 0 or more seconds (got %s)", secs(c.DrainSettle))
	}
	return nil
}

func (c Config) validateTimeouts() error {
	switch {
	case c.RequestTimeout <= 0:
		return bad("--request-timeout-secs", "must be more than 0 seconds (got %s)", secs(c.RequestTimeout))
	case c.ConnectTimeout <= 0:
		return bad("--connect-timeout-secs", "must be more than 0 seconds (got %s)", secs(c.ConnectTimeout))
	case c.FirstByteTimeout < 0:
		return bad("--first-byte-timeout-secs", "must be 0 (off) or more seconds (got %s)", secs(c.FirstByteTimeout))
	case c.PrefillTimeout < 0:
		return bad("--prefill-timeout-secs", "must be 0 (off) or more seconds (got %s)", secs(c.PrefillTimeout))
	case c.DecodeTimeout < 0:
		return bad("--decode-timeout-secs", "must be 0 (off) or more seconds (got %s)", secs(c.DecodeTimeout))
	case c.StallTimeout < 0:
		return bad("--stall-timeout-secs", "must be 0 (off) or more seconds (got %s)", secs(c.StallTimeout))
	case c.StallTimeout > 0 && (c.StallFloor <= 0 || c.StallFloor > c.StallTimeout):
		return bad("--stall-floor-secs", "must be more than 0 and at most --stall-timeout-secs (%s) (got %s)", secs(c.StallTimeout), secs(c.StallFloor))
	case c.CanaryTimeout <= 0:
		return bad("--canary-timeout-secs", "must be more than 0 seconds (got %s)", secs(c.CanaryTimeout))
	case c.ShutdownGracePeriod < 0:
		return bad("--shutdown-grace-period-secs", "must be 0 or more seconds (got %s)", secs(c.ShutdownGracePeriod))
	case c.ShutdownDrainDelay < 0:
		return bad("--shutdown-drain-delay-secs", "must be 0 or more seconds (got %s)", secs(c.ShutdownDrainDelay))
	case c.MaxPayloadSize <= 0:
		return bad("--max-payload-size", "must be more than 0 bytes (got %d)", c.MaxPayloadSize)
	}
	return nil
}

func (c Config) validateObservability() error {
	if strings.TrimSpace(c.PrometheusHost) == "" {
		return bad("--prometheus-host", "must not be empty (e.g. 0.0.0.0)")
	}
	if c.PrometheusPort < 0 || c.PrometheusPort > 65535 {
		return bad("--prometheus-port", "must be between 0 and 65535 (got %d); 0 serves /metrics on --port", c.PrometheusPort)
	}
	if c.PrometheusPort != 0 && c.PrometheusPort == c.Port {
		return bad("--prometheus-port", "must differ from --port %d (use 0 to serve /metrics on the main port)", c.Port)
	}
	if !contains(LogLevels, strings.ToLower(c.LogLevel)) {
		return bad("--log-level", "unknown level %q (expected debug, info, warn or error)", c.LogLevel)
	}
	if c.LogFormat != "" && !contains(LogFormats, c.LogFormat) {
		return bad("--log-format", "unknown format %q (expected json, text or cloud)", c.LogFormat)
	}
	if c.MemoryLimitMB < 0 {
		return bad("--memory-limit-mb", "must be 0 (automatic) or more MiB (got %d)", c.MemoryLimitMB)
	}
	if c.GOGC < 1 {
		return bad("--gogc", "must be 1 or more percent (got %d); GOGC=off in the environment turns the collector off", c.GOGC)
	}
	if c.LogFlushIntervalMS < 0 {
		return bad("--log-flush-interval-ms", "must be 0 (unbuffered) or more ms (got %d)", c.LogFlushIntervalMS)
	}
	return nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

func secs(d time.Duration) string { return fmt.Sprintf("%gs", d.Seconds()) }
