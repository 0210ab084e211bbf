package cli_test

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

func envOf(m map[string]string) cli.Env {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func port(p int) *int { return &p }

func TestPrefillTakesAnOptionalSeparatePort(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		args    []string
		prefill []config.PrefillSpec
		decode  []string
	}{
		{"url then port", []string{"--prefill", "http://p0:8000", "8998"},
			[]config.PrefillSpec{{URL: "http://p0:8000", BootstrapPort: port(8998)}}, nil},
		{"url then none", []string{"--prefill", "http://p0:8000", "none"},
			[]config.PrefillSpec{{URL: "http://p0:8000"}}, nil},
		{"none is case-insensitive", []string{"--prefill", "http://p0:8000", "NoNe"},
			[]config.PrefillSpec{{URL: "http://p0:8000"}}, nil},
		{"url followed by another flag", []string{"--prefill", "http://p0:8000", "--decode", "http://d0:8000"},
			[]config.PrefillSpec{{URL: "http://p0:8000"}}, []string{"http://d0:8000"}},
		{"url as the last argument", []string{"--decode", "http://d0:8000", "--prefill", "http://p0:8000"},
			[]config.PrefillSpec{{URL: "http://p0:8000"}}, []string{"http://d0:8000"}},
		{"--prefill=url form takes a port too", []string{"--prefill=http://p0:8000", "9001"},
			[]config.PrefillSpec{{URL: "http://p0:8000", BootstrapPort: port(9001)}}, nil},
		{"the seed's SGLang example", []string{
			"--prefill", "http://prefill-0:8000", "8998", "--prefill", "http://prefill-1:8000", "8998",
			"--decode", "http://decode-0:8000", "--decode", "http://decode-1:8000",
			"--prefill-policy", "cache_aware", "--decode-policy", "power_of_two"},
			[]config.PrefillSpec{{URL: "http://prefill-0:8000", BootstrapPort: port(8998)}, {URL: "http://prefill-1:8000", BootstrapPort: port(8998)}},
			[]string{"http://decode-0:8000", "http://decode-1:8000"}},
		{"the seed's vLLM Mooncake example", []string{
			"--prefill", "grpc://prefill-0:50051", "8998", "--prefill", "grpc://prefill-1:50051", "8999",
			"--decode", "grpc://decode-0:50052", "--model-path", "meta-llama/Llama-3.1-8B-Instruct"},
			[]config.PrefillSpec{{URL: "grpc://prefill-0:50051", BootstrapPort: port(8998)}, {URL: "grpc://prefill-1:50051", BootstrapPort: port(8999)}},
			[]string{"grpc://decode-0:50052"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := cli.ParseLaunch(append([]string{"--pd-disaggregation"}, tc.args...), envOf(nil))
			require.NoError(t, err)
			assert.Equal(t, tc.prefill, cfg.Prefill)
			assert.Equal(t, tc.decode, cfg.Decode)
		})
	}
}

func TestDefaultsMatchTheSpec(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch(nil, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, config.Default(), cfg)
	assert.Equal(t, 30000, cfg.Port)
	assert.Equal(t, "0.0.0.0", cfg.PrometheusHost)
	assert.Equal(t, 29000, cfg.PrometheusPort)
	assert.Equal(t, 60*time.Second, cfg.HealthCheckInterval)
	assert.Equal(t, 180*time.Second, cfg.ShutdownGracePeriod)
	assert.Equal(t, 5*time.Second, cfg.ShutdownDrainDelay)
}

func TestFlagsSetTheirFields(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{
		"--host", "127.0.0.1", "--port", "31000", "--policy", "round_robin", "--pd-pairing-mode", "strict",
		"--pd-admission-wait-secs", "0", "--dp-aware", "--health-check-timeout-secs", "2.5",
		"--health-check-interval-secs", "10", "--retry-max-retries", "3", "--cb-timeout-duration-secs", "30",
		"--request-timeout-secs", "600", "--shutdown-grace-period-secs", "20", "--shutdown-drain-delay-secs", "1.5", "--prometheus-port", "0",
		"--log-level", "debug", "--redis-url", "redis://127.0.0.1:6379/0", "--tokenizer-path", "/m/tok.json",
	}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "127.0.0.1", cfg.Host)
	assert.Equal(t, 31000, cfg.Port)
	assert.Equal(t, "round_robin", cfg.Policy)
	assert.Equal(t, "strict", cfg.PairingMode)
	assert.Equal(t, time.Duration(0), cfg.PDAdmissionWait)
	assert.True(t, cfg.DPAware)
	assert.Equal(t, 2500*time.Millisecond, cfg.HealthCheckTimeout)
	assert.Equal(t, 10*time.Second, cfg.HealthCheckInterval)
	assert.Equal(t, 3, cfg.RetryMaxRetries)
	assert.Equal(t, 30*time.Second, cfg.CBTimeout)
	assert.Equal(t, 600*time.Second, cfg.RequestTimeout)
	assert.Equal(t, 20*time.Second, cfg.ShutdownGracePeriod)
	assert.Equal(t, 1500*time.Millisecond, cfg.ShutdownDrainDelay)
	assert.Equal(t, 0, cfg.PrometheusPort)
	assert.Equal(t, "debug", cfg.LogLevel)
	assert.Equal(t, "redis://127.0.0.1:6379/0", cfg.RedisURL)
	assert.Equal(t, "/m/tok.json", cfg.TokenizerPath)
}

func TestEnvironment(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		args  []string
		env   map[string]string
		check func(t *testing.T, c config.Config)
	}{
		{"SMG_* sets flags", nil, map[string]string{
			"SMG_PD_DISAGGREGATION": "true", "SMG_PREFILL": "http://p0:8000 8998, http://p1:8000 none",
			"SMG_DECODE": "http://d0:8000,http://d1:8000", "SMG_HEALTH_CHECK_TIMEOUT_SECS": "2.5",
			"SMG_POLICY": "round_robin", "SMG_PROMETHEUS_PORT": "0", "SMG_REDIS_URL": "redis://127.0.0.1:6379",
		}, func(t *testing.T, c config.Config) {
			assert.True(t, c.PDDisaggregation)
			assert.Equal(t, []config.PrefillSpec{{URL: "http://p0:8000", BootstrapPort: port(8998)}, {URL: "http://p1:8000"}}, c.Prefill)
			assert.Equal(t, []string{"http://d0:8000", "http://d1:8000"}, c.Decode)
			assert.Equal(t, 2500*time.Millisecond, c.HealthCheckTimeout)
			assert.Equal(t, "round_robin", c.Policy)
			assert.Equal(t, 0, c.PrometheusPort)
			assert.Equal(t, "redis://127.0.0.1:6379", c.RedisURL)
		}},
		{"command line wins over SMG_*", []string{"--port", "31000", "--decode", "http://cli:8000", "--pd-disaggregation"},
			map[string]string{"SMG_PORT": "32000", "SMG_DECODE": "http://env:8000"},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, 31000, c.Port)
				assert.Equal(t, []string{"http://cli:8000"}, c.Decode)
			}},
		{"empty variables are ignored", nil, map[string]string{"SMG_PORT": "", "SMG_POLICY": "  "},
			func(t *testing.T, c config.Config) {
				assert.Equal(t, 30000, c.Port)
				assert.Equal(t, "cache_aware", c.Policy)
			}},
		{"PORT overrides --port", []string{"--port", "31000"}, map[string]string{"PORT": "8080"},
			func(t *testing.T, c config.Config) { assert.Equal(t, 8080, c.Port) }},
		{"PORT overrides SMG_PORT", nil, map[string]string{"PORT": "8080", "SMG_PORT": "31000"},
			func(t *testing.T, c config.Config) { assert.Equal(t, 8080, c.Port) }},
		{"RUST_LOG of the seed's example gives debug", nil, map[string]string{"RUST_LOG": "smg=info,smg::routers=debug"},
			func(t *testing.T, c config.Config) { assert.Equal(t, "debug", c.LogLevel) }},
		{"RUST_LOG bare level, trace is debug", nil, map[string]string{"RUST_LOG": "trace"},
			func(t *testing.T, c config.Config) { assert.Equal(t, "debug", c.LogLevel) }},
		{"RUST_LOG for other crates changes nothing", nil, map[string]string{"RUST_LOG": "hyper=debug"},
			func(t *testing.T, c config.Config) { assert.Equal(t, "info", c.LogLevel) }},
		{"--log-level wins over RUST_LOG", []string{"--log-level", "warn"}, map[string]string{"RUST_LOG": "smg=debug"},
			func(t *testing.T, c config.Config) { assert.Equal(t, "warn", c.LogLevel) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := cli.ParseLaunch(tc.args, envOf(tc.env))
			require.NoError(t, err)
			tc.check(t, cfg)
		})
	}
}

func TestBadValuesGiveOneLineNamingTheFlag(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"port not a number", []string{"--port", "abc"}, nil, `invalid value "abc" for --port: expected a whole number`},
		{"port out of range", []string{"--port", "70000"}, nil, "invalid value for --port: must be between 0 and 65535 (got 70000)"},
		{"prefill port is not a port", []string{"--pd-disaggregation", "--prefill", "http://p:8000", "eight"}, nil,
			`invalid value for --prefill: http://p:8000: "eight" is not a bootstrap port (expected 1-65535 or none)`},
		{"prefill port 0", []string{"--pd-disaggregation", "--prefill", "http://p:8000", "0"}, nil,
			"invalid value for --prefill: http://p:8000: bootstrap port must be between 1 and 65535 (got 0)"},
		{"prefill port too large", []string{"--pd-disaggregation", "--prefill", "http://p:8000", "65536"}, nil,
			"invalid value for --prefill: http://p:8000: bootstrap port must be between 1 and 65535 (got 65536)"},
		{"prefill url without scheme", []string{"--pd-disaggregation", "--prefill", "p:8000"}, nil,
			"invalid value for --prefill: p:8000 - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme"},
		{"prefill without a url", []string{"--pd-disaggregation", "--prefill"}, nil, "flag needs an argument: --prefill"},
		{"unknown policy", []string{"--decode-policy", "fastest"}, nil,
			`invalid value for --decode-policy: unknown policy "fastest" (expected one of random, round_robin, cache_aware, power_of_two, least_load, prefix_hash, consistent_hashing, manual, bucket)`},
		{"bad seconds", []string{"--health-check-timeout-secs", "soon"}, nil,
			`invalid value "soon" for --health-check-timeout-secs: expected a number of seconds`},
		{"bad float", []string{"--cache-threshold", "high"}, nil, `invalid value "high" for --cache-threshold: expected a number`},
		{"bad bool", []string{"--dp-aware=maybe"}, nil, `invalid value "maybe" for --dp-aware: expected true or false`},
		{"unknown flag", []string{"--turbo"}, nil, "unknown flag: --turbo"},
		{"stray argument", []string{"--pd-disaggregation", "--decode", "http://d:8000", "extra"}, nil,
			`unexpected argument "extra": flags start with --, and a --prefill URL may be followed only by a bootstrap port or none`},
		{"bad SMG_ variable", nil, map[string]string{"SMG_HEALTH_CHECK_INTERVAL_SECS": "often"},
			`invalid value "often" for SMG_HEALTH_CHECK_INTERVAL_SECS (--health-check-interval-secs): expected a number of seconds`},
		{"bad SMG_PREFILL entry", nil, map[string]string{"SMG_PD_DISAGGREGATION": "1", "SMG_PREFILL": "http://p:8000 x"},
			`invalid value for SMG_PREFILL (--prefill): http://p:8000: "x" is not a bootstrap port (expected 1-65535 or none)`},
		{"bad PORT", nil, map[string]string{"PORT": "eighty"}, `invalid value "eighty" for PORT (overrides --port): expected a whole number`},
		{"empty admin key", []string{"--admin-api-key", ""}, nil, "invalid value for --admin-api-key: the key is empty (leave the flag out for an open API)"},
		{"empty data-plane key", []string{"--api-key", " "}, nil, "invalid value for --api-key: the key is empty (leave the flag out for an open API)"},
		{"bad RUST_LOG level", nil, map[string]string{"RUST_LOG": "smg=loud"},
			`invalid value "smg=loud" for RUST_LOG: "loud" is not a level (error, warn, info, debug, trace, off); or set --log-level`},
		{"invalid combination from env", nil, map[string]string{"SMG_DECODE_POLICY": "bucket", "SMG_PD_DISAGGREGATION": "true"},
			"invalid value for --decode-policy: bucket is a prefill-only policy and cannot route the decode leg"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := cli.ParseLaunch(tc.args, envOf(tc.env))
			require.Error(t, err)
			assert.Equal(t, tc.want, err.Error())

			// The same through the whole command line: exit 2 and exactly that one line.
			var out, errOut bytes.Buffer
			code := cli.Run(context.Background(), append([]string{"launch"}, tc.args...), envOf(tc.env), &out, &errOut)
			assert.Equal(t, 2, code)
			assert.Equal(t, "smg: "+tc.want+"\n", errOut.String())
			assert.Empty(t, out.String())
		})
	}
}

func TestLaunchWithoutSubcommand(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), []string{"--port", "x"}, envOf(nil), &out, &errOut)
	assert.Equal(t, 2, code)
	assert.Equal(t, "smg: invalid value \"x\" for --port: expected a whole number\n", errOut.String())
}

func TestHelpIsGrouped(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Run(context.Background(), []string{"launch", "--help"}, envOf(nil), &out, &errOut))
	help := out.String()
	last := -1
	for _, title := range []string{"Server:", "PD disaggregation:", "Workers:", "Policies:", "Health checks:",
		"Resilience (retries, circuit breaker):", "Timeouts:", "Observability:", "Environment:"} {
		i := strings.Index(help, "\n"+title+"\n")
		require.Greater(t, i, last, "group %q missing or out of order", title)
		last = i
	}
	for _, flag := range []string{"--pd-disaggregation", "--prefill url", "--decode url", "--policy", "--prefill-policy",
		"--decode-policy", "--pd-pairing-mode", "--pd-admission-wait-secs", "--dp-aware", "--model-path",
		"--tokenizer-path", "--host", "--port", "--redis-url", "--health-check-interval-secs",
		"--shutdown-grace-period-secs", "--shutdown-drain-delay-secs", "--prometheus-host", "--prometheus-port", "--log-level"} {
		assert.Contains(t, help, flag+" ")
	}
	pd := help[strings.Index(help, "PD disaggregation:"):strings.Index(help, "Workers:")]
	assert.Contains(t, pd, "--prefill url")
	assert.NotContains(t, pd, "--host")
}

func TestVersion(t *testing.T) {
	t.Parallel()
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Run(context.Background(), []string{"version"}, envOf(nil), &out, &errOut))
	assert.Regexp(t, `^smg \S+ \(go[0-9.]+\S*, \w+/\w+\)\n$`, out.String())
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return p
}

func TestTakenPortExitsOne(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	p := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	var out, errOut bytes.Buffer
	code := cli.Run(context.Background(), []string{"launch", "--host", "127.0.0.1", "--port", p, "--prometheus-port", "0", "--log-level", "error"},
		envOf(nil), &out, &errOut)
	assert.Equal(t, 1, code)
	assert.Regexp(t, `^smg: start: server: listen on 127\.0\.0\.1:`+p+` \(--host/--port\): .*address already in use\n$`, errOut.String())
}

func TestLaunchServesUntilCancelledThenExitsZero(t *testing.T) {
	t.Parallel()
	// freePort closes its listener before launch binds the port, so another parallel test may
	// take it in between; launch then exits 1 at once and the test tries a new port.
	for attempt := 0; attempt < 3; attempt++ {
		if launchServesUntilCancelled(t) {
			return
		}
	}
	t.Fatal("launch could not bind a free port in 3 attempts")
}

// launchServesUntilCancelled starts launch on a free port, waits until it accepts connections,
// cancels it and requires exit code 0. It reports false when the port was taken before launch
// could bind it.
func launchServesUntilCancelled(t *testing.T) bool {
	t.Helper()
	p := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan int, 1)
	var out, errOut bytes.Buffer
	go func() {
		done <- cli.Run(ctx, []string{"launch", "--host", "127.0.0.1", "--port", strconv.Itoa(p), "--prometheus-port", "0",
			"--log-level", "error", "--pd-disaggregation", "--shutdown-drain-delay-secs", "0"}, envOf(nil), &out, &errOut)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case code := <-done:
			require.Equal(t, 1, code, "launch returned before cancel: %s", errOut.String())
			require.Contains(t, errOut.String(), "address already in use")
			return false
		default:
		}
		if c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p))); err == nil {
			c.Close()
			break
		}
		require.True(t, time.Now().Before(deadline), "launch did not listen within 10 s")
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, errOut.String())
	case <-time.After(10 * time.Second):
		t.Fatal("launch did not return after cancel")
	}
	return true
}

func TestOpenAPIMatchesTheCommittedDocument(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "openapi", "openapi.yaml"))
	require.NoError(t, err)

	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Run(context.Background(), []string{"openapi"}, envOf(nil), &out, &errOut), errOut.String())
	assert.Equal(t, string(committed), out.String())
	assert.Contains(t, out.String(), "openapi: 3.1.0")

	file := filepath.Join(t.TempDir(), "openapi.yaml")
	require.Equal(t, 0, cli.Run(context.Background(), []string{"openapi", "-o", file}, envOf(nil), &out, &errOut), errOut.String())
	written, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, string(committed), string(written))
}
