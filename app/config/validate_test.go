package config_test

import (
	"errors"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
)

func intp(i int) *int { return &i }

func TestDefaultIsValid(t *testing.T) {
	t.Parallel()
	require.NoError(t, config.Default().Validate())
}

func TestValidateAcceptsSeedExamples(t *testing.T) {
	t.Parallel()
	cases := map[string]func(*config.Config){
		"SGLang HTTP fleet with bootstrap ports": func(c *config.Config) {
			c.PDDisaggregation = true
			c.Prefill = []config.PrefillSpec{{URL: "http://prefill-0:8000", BootstrapPort: intp(8998)}, {URL: "http://prefill-1:8000", BootstrapPort: intp(8998)}}
			c.Decode = []string{"http://decode-0:8000", "http://decode-1:8000"}
			c.PrefillPolicy, c.DecodePolicy = "cache_aware", "power_of_two"
		},
		"vLLM NIXL gRPC without a port": func(c *config.Config) {
			c.PDDisaggregation = true
			c.Prefill = []config.PrefillSpec{{URL: "grpc://prefill-0:50051"}}
			c.Decode = []string{"grpc://decode-0:50052"}
		},
		"PD with no startup workers": func(c *config.Config) { c.PDDisaggregation = true },
		"port 0 binds a free port":   func(c *config.Config) { c.Port = 0 },
		"metrics on the main port":   func(c *config.Config) { c.PrometheusPort = 0 },
		"admission wait 0 sheds at once": func(c *config.Config) {
			c.PDAdmissionWait = 0
		},
		"bucket on prefill with an explicit decode policy": func(c *config.Config) {
			c.PDDisaggregation = true
			c.Policy, c.DecodePolicy = "bucket", "round_robin"
		},
		"bucket on a regular router": func(c *config.Config) { c.Policy = "bucket" },
		"power_of_two before any worker registered": func(c *config.Config) {
			c.PDDisaggregation = true
			c.Policy = "power_of_two"
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c := config.Default()
			mutate(&c)
			assert.NoError(t, c.Validate())
		})
	}
}

func TestValidateNamesTheFlag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*config.Config)
		want   string
	}{
		{"port out of range", func(c *config.Config) { c.Port = 70000 },
			"invalid value for --port: must be between 0 and 65535 (got 70000)"},
		{"empty host", func(c *config.Config) { c.Host = " " },
			"invalid value for --host: must not be empty (e.g. 0.0.0.0 or 127.0.0.1)"},
		{"prefill without PD mode", func(c *config.Config) { c.Prefill = []config.PrefillSpec{{URL: "http://p:8000"}} },
			"invalid value for --prefill: needs --pd-disaggregation"},
		{"prefill URL without scheme", func(c *config.Config) {
			c.PDDisaggregation = true
			c.Prefill = []config.PrefillSpec{{URL: "10.0.0.5:8000"}}
		}, "invalid value for --prefill: 10.0.0.5:8000 - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme"},
		{"prefill bootstrap port 0", func(c *config.Config) {
			c.PDDisaggregation = true
			c.Prefill = []config.PrefillSpec{{URL: "http://p:8000", BootstrapPort: intp(0)}}
		}, "invalid value for --prefill: http://p:8000: bootstrap port must be between 1 and 65535 (got 0)"},
		{"ipc decode", func(c *config.Config) {
			c.PDDisaggregation = true
			c.Decode = []string{"ipc:///tmp/decode.sock"}
		}, "invalid value for --decode: ipc:///tmp/decode.sock: ipc:// workers cannot be prefill or decode workers: the ZMQ wire carries no KV-transfer metadata"},
		{"negative prefill-only threshold", func(c *config.Config) { c.SelectivePD.PrefillOnlyMaxTokens = -1 },
			"invalid value for --selective-pd-prefill-only-max-tokens: must be >= 0 (0 = off), got -1"},
		{"unknown policy", func(c *config.Config) { c.Policy = "fastest" },
			`invalid value for --policy: unknown policy "fastest" (expected one of random, round_robin, cache_aware, power_of_two, least_load, prefix_hash, consistent_hashing, manual, bucket)`},
		{"explicit bucket decode policy", func(c *config.Config) { c.PDDisaggregation = true; c.DecodePolicy = "bucket" },
			"invalid value for --decode-policy: bucket is a prefill-only policy and cannot route the decode leg"},
		{"power_of_two with one prefill", func(c *config.Config) {
			c.PDDisaggregation = true
			c.PrefillPolicy = "power_of_two"
			c.Prefill = []config.PrefillSpec{{URL: "http://p:8000"}}
		}, "invalid value for --prefill-policy: power_of_two needs at least 2 prefill workers at startup (got 1)"},
		{"bucket inherited by the decode leg", func(c *config.Config) { c.PDDisaggregation = true; c.Policy = "bucket" },
			"invalid value for --policy: bucket is a prefill-only policy and cannot route the decode leg"},
		{"power_of_two from --policy with one decode", func(c *config.Config) {
			c.PDDisaggregation = true
			c.Policy = "power_of_two"
			c.Prefill = []config.PrefillSpec{{URL: "http://p0:8000"}, {URL: "http://p1:8000"}}
			c.Decode = []string{"http://d:8000"}
		}, "invalid value for --policy: power_of_two needs at least 2 decode workers at startup (got 1)"},
		{"unknown pairing mode", func(c *config.Config) { c.PairingMode = "loose" },
			`invalid value for --pd-pairing-mode: unknown mode "loose" (expected off, lenient or strict)`},
		{"negative admission wait", func(c *config.Config) { c.PDAdmissionWait = -time.Second },
			"invalid value for --pd-admission-wait-secs: must be 0 or more seconds (got -1s)"},
		{"unknown mm processing", func(c *config.Config) { c.MMProcessing = "engine" },
			`invalid value for --mm-processing: unknown mode "engine" (expected gateway or worker)`},
		{"negative engine message limit", func(c *config.Config) { c.EngineMaxMessageMB = -1 },
			"invalid value for --engine-max-message-mb: must be 0 (no check) or more MiB (got -1)"},
		{"no media concurrency", func(c *config.Config) { c.MediaMaxConcurrency = 0 },
			"invalid value for --media-max-concurrency: must be 1 or more images (got 0)"},
		{"no media budget", func(c *config.Config) { c.MediaMemoryBudgetMB = 0 },
			"invalid value for --media-memory-budget-mb: must be 1 or more MiB (got 0)"},
		{"negative media budget wait", func(c *config.Config) { c.MediaBudgetWaitMS = -1 },
			"invalid value for --media-budget-wait-ms: must be 0 or more ms (got -1)"},
		{"negative memory limit", func(c *config.Config) { c.MemoryLimitMB = -1 },
			"invalid value for --memory-limit-mb: must be 0 (automatic) or more MiB (got -1)"},
		{"cache threshold above 1", func(c *config.Config) { c.CacheThreshold = 1.5 },
			"invalid value for --cache-threshold: must be between 0 and 1 (got 1.5)"},
		{"zero retries", func(c *config.Config) { c.RetryMaxRetries = 0 },
			"invalid value for --retry-max-retries: must be 1 or more total attempts (got 0)"},
		{"max backoff below initial", func(c *config.Config) { c.RetryMaxBackoffMS = 10 },
			"invalid value for --retry-max-backoff-ms: must be at least --retry-initial-backoff-ms (50 ms; got 10)"},
		{"jitter above 1", func(c *config.Config) { c.RetryJitterFactor = 2 },
			"invalid value for --retry-jitter-factor: must be between 0 and 1 (got 2)"},
		{"zero health interval", func(c *config.Config) { c.HealthCheckInterval = 0 },
			"invalid value for --health-check-interval-secs: must be more than 0 seconds (got 0s)"},
		{"health endpoint without slash", func(c *config.Config) { c.HealthCheckEndpoint = "health" },
			`invalid value for --health-check-endpoint: must be a path starting with / (got "health")`},
		{"negative grace period", func(c *config.Config) { c.ShutdownGracePeriod = -time.Second },
			"invalid value for --shutdown-grace-period-secs: must be 0 or more seconds (got -1s)"},
		{"negative drain delay", func(c *config.Config) { c.ShutdownDrainDelay = -time.Second },
			"invalid value for --shutdown-drain-delay-secs: must be 0 or more seconds (got -1s)"},
		{"metrics port equals main port", func(c *config.Config) { c.PrometheusPort = c.Port },
			"invalid value for --prometheus-port: must differ from --port 30000 (use 0 to serve /metrics on the main port)"},
		{"unknown log level", func(c *config.Config) { c.LogLevel = "loud" },
			`invalid value for --log-level: unknown level "loud" (expected debug, info, warn or error)`},
		{"negative log flush interval", func(c *config.Config) { c.LogFlushIntervalMS = -1 },
			"invalid value for --log-flush-interval-ms: must be 0 (unbuffered) or more ms (got -1)"},
		{"gogc below 1", func(c *config.Config) { c.GOGC = 0 },
			"invalid value for --gogc: must be 1 or more percent (got 0); GOGC=off in the environment turns the collector off"},
		{"negative stall ceiling", func(c *config.Config) { c.StallTimeout = -time.Second },
			"invalid value for --stall-timeout-secs: must be 0 (off) or more seconds (got -1s)"},
		{"stall floor over the ceiling", func(c *config.Config) { c.StallFloor = 31 * time.Second },
			"invalid value for --stall-floor-secs: must be more than 0 and at most --stall-timeout-secs (30s) (got 31s)"},
		{"canary deadline 0", func(c *config.Config) { c.CanaryTimeout = 0 },
			"invalid value for --canary-timeout-secs: must be more than 0 seconds (got 0s)"},
		{"bad redis url", func(c *config.Config) { c.RedisURL = "http://r:6379" },
			`invalid value for --redis-url: must be a redis://, rediss:// or unix:// URL (got "http://r:6379")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := config.Default()
			tc.mutate(&c)
			err := c.Validate()
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())
			var fe *config.FlagError
			require.True(t, errors.As(err, &fe))
			assert.Contains(t, tc.want, fe.Flag)
		})
	}
}

func TestValidateEdgeFlags(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mutate func(*config.Config)
		flag   string // "" = valid
	}{
		{"redis db number", func(c *config.Config) { c.RedisURL = "redis://127.0.0.1:6379/3" }, ""},
		{"redis db query", func(c *config.Config) { c.RedisURL = "unix:///tmp/r.sock?db=2" }, ""},
		{"redis db not a number", func(c *config.Config) { c.RedisURL = "redis://127.0.0.1:6379/abc" }, "--redis-url"},
		{"redis db negative", func(c *config.Config) { c.RedisURL = "rediss://h:6379/-1" }, "--redis-url"},
		{"redis key prefix empty", func(c *config.Config) { c.RedisKeyPrefix = "" }, "--redis-key-prefix"},
		{"redis cluster seeds", func(c *config.Config) { c.RedisURL = "redis://h1:7101,h2:7102,h3" }, ""},
		{"redis cluster addr params", func(c *config.Config) { c.RedisURL = "rediss://u:p@h1:7101?addr=h2:7102" }, ""},
		{"redis cluster flag, one seed", func(c *config.Config) { c.RedisURL = "redis://h1:7101"; c.RedisCluster = true }, ""},
		{"redis cluster database 1", func(c *config.Config) { c.RedisURL = "redis://h1:7101,h2:7102/1" }, "--redis-url"},
		{"redis cluster db query", func(c *config.Config) { c.RedisURL = "redis://h1:7101?addr=h2:7102&db=3" }, "--redis-url"},
		{"redis cluster empty seed", func(c *config.Config) { c.RedisURL = "redis://h1:7101,,h2:7102" }, "--redis-url"},
		{"redis cluster over unix", func(c *config.Config) { c.RedisURL = "unix:///tmp/r.sock"; c.RedisCluster = true }, "--redis-url"},
		{"redis cluster without url", func(c *config.Config) { c.RedisCluster = true }, "--redis-cluster"},
		{"redis path too deep", func(c *config.Config) { c.RedisURL = "redis://h:6379/1/2" }, "--redis-url"},
		{"redis db query bad", func(c *config.Config) { c.RedisURL = "unix:///tmp/r.sock?db=x" }, "--redis-url"},
		{"body read timeout 0", func(c *config.Config) { c.BodyReadTimeout = 0 }, "--body-read-timeout-secs"},
		{"negative in-flight body budget", func(c *config.Config) { c.MaxInflightBodyMB = -1 }, "--max-inflight-body-mb"},
		{"admin key with space", func(c *config.Config) { c.AdminAPIKey = "a b" }, "--admin-api-key"},
		{"api key with newline", func(c *config.Config) { c.APIKey = "k\n" }, "--api-key"},
		{"allow-list CIDR", func(c *config.Config) {
			c.WorkerAllowedHosts = []string{"10.0.0.0/8", "fd00::/8", "gpu-0", "169.254.1.1"}
		}, ""},
		{"allow-list bad CIDR", func(c *config.Config) { c.WorkerAllowedHosts = []string{"10.0.0.0/99"} }, "--worker-allowed-hosts"},
		{"max workers negative", func(c *config.Config) { c.MaxWorkers = -1 }, "--max-workers"},
		{"max workers 0 is no cap", func(c *config.Config) { c.MaxWorkers = 0 }, ""},
		{"probe concurrency 0", func(c *config.Config) { c.RegistrationProbes = 0 }, "--registration-probe-concurrency"},
		{"no request-id headers", func(c *config.Config) { c.RequestIDHeaders = nil }, "--request-id-headers"},
		{"request-id header with colon", func(c *config.Config) { c.RequestIDHeaders = []string{"x-id:"} }, "--request-id-headers"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := config.Default()
			tc.mutate(&c)
			err := c.Validate()
			if tc.flag == "" {
				assert.NoError(t, err)
				return
			}
			var fe *config.FlagError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.flag, fe.Flag)
		})
	}
}

func TestLoadSecretsReadsTheAdminKeyFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := dir + "/key"
	require.NoError(t, os.WriteFile(path, []byte("  s3cret-key\n"), 0o600))
	c := config.Default()
	c.AdminAPIKeyFile = path
	require.NoError(t, c.LoadSecrets())
	assert.Equal(t, "s3cret-key", c.AdminAPIKey)

	c = config.Default()
	c.AdminAPIKeyFile, c.AdminAPIKey = path, "other"
	var fe *config.FlagError
	require.ErrorAs(t, c.LoadSecrets(), &fe)
	assert.Equal(t, "--admin-api-key-file", fe.Flag)

	c = config.Default()
	c.AdminAPIKeyFile = dir + "/missing"
	require.ErrorAs(t, c.LoadSecrets(), &fe)
	assert.Equal(t, "--admin-api-key-file", fe.Flag)

	require.NoError(t, os.WriteFile(path, []byte("\n"), 0o600))
	c = config.Default()
	c.AdminAPIKeyFile = path
	require.ErrorAs(t, c.LoadSecrets(), &fe)
}
