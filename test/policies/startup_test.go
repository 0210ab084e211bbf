package policies_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// launchTimeout bounds one `smg launch` run of a start-up test (a hang guard: a refused
// configuration exits at once, an accepted one would serve until killed).
const launchTimeout = 10 * time.Second

// cleanEnv is the test's environment without SMG_* variables, so that only the flags a case
// lists configure the gateway.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SMG_") {
			out = append(out, kv)
		}
	}
	return out
}

// Issue #7, Done when: start-up errors for the invalid combinations, one clear line each —
// run against the built binary, as an operator would: `smg launch <flags>` exits with code 2,
// prints nothing on stdout and exactly one line on stderr naming the flag. Issue #6's
// --pd-pairing-mode is checked here too.
func TestLaunchRefusesInvalidPolicySetups(t *testing.T) {
	t.Parallel()
	pd := []string{"--pd-disaggregation", "--host", "127.0.0.1", "--port", "0"}
	unknownList := "(expected one of random, round_robin, cache_aware, power_of_two, least_load, prefix_hash, consistent_hashing, manual, bucket)"
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"bucket as the decode policy", []string{"--decode-policy", "bucket"},
			"smg: invalid value for --decode-policy: bucket is a prefill-only policy and cannot route the decode leg"},
		{"bucket inherited by the decode leg from --policy", []string{"--policy", "bucket"},
			"smg: invalid value for --policy: bucket is a prefill-only policy and cannot route the decode leg"},
		{"power_of_two on the prefill leg with one startup prefill",
			[]string{"--prefill-policy", "power_of_two", "--prefill", "http://127.0.0.1:1", "8998",
				"--decode", "http://127.0.0.1:2", "--decode", "http://127.0.0.1:3"},
			"smg: invalid value for --prefill-policy: power_of_two needs at least 2 prefill workers at startup (got 1)"},
		{"power_of_two on the decode leg with one startup decode",
			[]string{"--decode-policy", "power_of_two", "--prefill", "http://127.0.0.1:1", "8998", "--decode", "http://127.0.0.1:2"},
			"smg: invalid value for --decode-policy: power_of_two needs at least 2 decode workers at startup (got 1)"},
		{"power_of_two inherited from --policy by a one-prefill leg",
			[]string{"--policy", "power_of_two", "--prefill", "http://127.0.0.1:1", "--decode", "http://127.0.0.1:2", "--decode", "http://127.0.0.1:3"},
			"smg: invalid value for --policy: power_of_two needs at least 2 prefill workers at startup (got 1)"},
		{"unknown --policy", []string{"--policy", "fastest"},
			`smg: invalid value for --policy: unknown policy "fastest" ` + unknownList},
		{"unknown --prefill-policy", []string{"--prefill-policy", "least-load"},
			`smg: invalid value for --prefill-policy: unknown policy "least-load" ` + unknownList},
		{"unknown --decode-policy", []string{"--decode-policy", "RoundRobin"},
			`smg: invalid value for --decode-policy: unknown policy "RoundRobin" ` + unknownList},
		{"unknown --pd-pairing-mode", []string{"--pd-pairing-mode", "bogus"},
			`smg: invalid value for --pd-pairing-mode: unknown mode "bogus" (expected off, lenient or strict)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, smgBin, append(append([]string{"launch"}, pd...), tc.args...)...)
			cmd.Env = cleanEnv()
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			require.NoError(t, ctx.Err(), "smg launch did not exit: it accepted the configuration")
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "want a non-zero exit, got %v", err)
			assert.Equal(t, 2, ee.ExitCode(), "a bad configuration exits 2")
			assert.Empty(t, stdout.String())
			assert.Equal(t, tc.want+"\n", stderr.String(), "exactly one line")
		})
	}
}

// Control for the table above: the checks refuse only what they should. power_of_two with
// no startup workers (they arrive through POST /workers) and bucket on the prefill leg with
// an explicit decode policy start, serve /liveness, and stop cleanly on SIGTERM.
func TestLaunchAcceptsValidPolicySetups(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"power_of_two before any worker registered", []string{"--policy", "power_of_two"}},
		{"bucket prefill with a round_robin decode", []string{"--prefill-policy", "bucket", "--decode-policy", "round_robin"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			port := freePort(t)
			ctx, cancel := context.WithTimeout(context.Background(), launchTimeout)
			defer cancel()
			// Metrics on the main port: parallel subtests must not race for 0.0.0.0:29000.
			args := append([]string{"launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", strconv.Itoa(port),
				"--prometheus-port", "0", "--log-level", "error", "--shutdown-drain-delay-secs", "0"}, tc.args...)
			cmd := exec.CommandContext(ctx, smgBin, args...)
			cmd.Env = cleanEnv()
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				<-done
			})

			url := "http://127.0.0.1:" + strconv.Itoa(port) + "/liveness"
			client := &http.Client{Timeout: time.Second}
			defer client.CloseIdleConnections()
			for {
				if r, err := client.Get(url); err == nil {
					_ = r.Body.Close()
					require.Equal(t, http.StatusOK, r.StatusCode)
					break
				}
				select {
				case err := <-done:
					done <- err
					t.Fatalf("smg launch exited: %v: %s", err, stderr.String())
				case <-ctx.Done():
					t.Fatalf("smg launch did not serve /liveness within %s: %s", launchTimeout, stderr.String())
				case <-time.After(20 * time.Millisecond):
				}
			}
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			select {
			case err := <-done:
				done <- err
				assert.NoError(t, err, "clean exit on SIGTERM: %s", stderr.String())
			case <-ctx.Done():
				t.Fatal("smg did not stop on SIGTERM")
			}
		})
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}
