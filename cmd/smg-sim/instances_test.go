package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// startLines runs smg-sim with args until want ready lines are printed; it returns them and
// a stop func that ends the process's serve loop and checks that it stopped.
func startLines(t *testing.T, want int, args ...string) ([]string, func()) {
	t.Helper()
	cmd := newCommand()
	var out lockedBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	deadline := time.Now().Add(15 * time.Second)
	for strings.Count(out.String(), "\n") < want && time.Now().Before(deadline) {
		select {
		case err := <-done:
			cancel()
			t.Fatalf("smg-sim ended early: %v (%q)", err, out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	require.Len(t, lines, want, "ready lines: %q", out.String())
	return lines, func() {
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("smg-sim did not stop")
		}
	}
}

func simStats(t *testing.T, base string) sim.Stats {
	t.Helper()
	resp, err := http.Get(base + "/sim/stats")
	require.NoError(t, err)
	defer resp.Body.Close()
	var st sim.Stats
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&st))
	return st
}

var httpLine = regexp.MustCompile(`^smg-sim vllm decode listening on (http://127\.0\.0\.1:(\d+)) bootstrap=0 engine_id=(\S+)$`)

// --instances N serves N independent workers from one process: one ready line each (the
// usual shape, so existing parsers read them), their own engine ids, ports, /sim/stats and
// runtime faults.
func TestInstancesAreIndependentWorkers(t *testing.T) {
	lines, stop := startLines(t, 3, "--engine", "vllm", "--role", "decode", "--engine-id", "e", "--instances", "3")
	defer stop()
	var urls []string
	for i, l := range lines {
		m := httpLine.FindStringSubmatch(l)
		require.NotNil(t, m, "line %d: %q", i, l)
		assert.Equal(t, fmt.Sprintf("e-%d", i), m[3])
		urls = append(urls, m[1])
	}
	assert.Len(t, map[string]bool{urls[0]: true, urls[1]: true, urls[2]: true}, 3, "one port each")

	resp, err := http.Post(urls[1]+"/v1/completions", "application/json", strings.NewReader(`{"model":"sim-model","prompt":"hi","max_tokens":1}`))
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, int64(1), simStats(t, urls[1]).Requests)
	assert.Zero(t, simStats(t, urls[0]).Requests, "stats are per instance")
	assert.Zero(t, simStats(t, urls[2]).Requests)

	resp, err = http.Post(urls[0]+"/sim/fault?kind=hang", "", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp, err = http.Post(urls[2]+"/v1/completions", "application/json", strings.NewReader(`{"model":"sim-model","prompt":"hi","max_tokens":1}`))
	require.NoError(t, err, "a fault on instance 0 does not hang instance 2")
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
}

// freeRun returns a base port with n consecutive free loopback ports after it.
func freeRun(t *testing.T, n int) int {
	t.Helper()
	for range 50 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		base := l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
		ok := base+n < 65536
		for i := 1; ok && i < n; i++ {
			li, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", base+i))
			if ok = err == nil; ok {
				_ = li.Close()
			}
		}
		if ok {
			return base
		}
	}
	t.Fatal("no run of free ports")
	return 0
}

// With a fixed --port the instances take consecutive ports, in ready-line order.
func TestInstancesTakeConsecutivePorts(t *testing.T) {
	base := freeRun(t, 4)
	lines, stop := startLines(t, 4, "--engine", "vllm", "--role", "decode", "--instances", "4", "--port", fmt.Sprint(base))
	defer stop()
	for i, l := range lines {
		m := httpLine.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		assert.Equal(t, fmt.Sprint(base+i), m[2])
	}
}

// gRPC instances: each its own engine service and stats listener.
func TestInstancesGRPC(t *testing.T) {
	lines, stop := startLines(t, 2, "--transport", "grpc", "--engine", "vllm", "--role", "decode", "--engine-id", "g", "--instances", "2")
	defer stop()
	re := regexp.MustCompile(`^smg-sim vllm decode listening on grpc://127\.0\.0\.1:(\d+) bootstrap=0 stats=(http://127\.0\.0\.1:\d+) engine_id=g-(\d)$`)
	seen := map[string]bool{}
	for i, l := range lines {
		m := re.FindStringSubmatch(l)
		require.NotNil(t, m, l)
		assert.Equal(t, fmt.Sprint(i), m[3])
		seen[m[1]], seen[m[2]] = true, true
		assert.Zero(t, simStats(t, m[2]).Requests)
	}
	assert.Len(t, seen, 4, "distinct engine and stats ports")
}

func TestInstancesFlagErrors(t *testing.T) {
	for args, want := range map[string]string{
		"--instances 0":    "want 1 to",
		"--instances 9000": "want 1 to",
		`--instances 2 --kv-events-config {"enable_kv_cache_events":true}`: "one instance per process",
	} {
		cmd := newCommand()
		cmd.SetOut(&bytes.Buffer{})
		cmd.SetErr(&bytes.Buffer{})
		cmd.SetArgs(append([]string{"--engine", "vllm", "--role", "decode"}, strings.Fields(args)...))
		assert.ErrorContains(t, cmd.Execute(), want, args)
	}
}

// The instances of one process share one side-channel transport (a bounded idle pool): one
// pool per instance keeps an idle connection from every decode instance to every prefill
// instance it pulled from, and at 512 instances per role the processes ran out of
// descriptors ("socket: too many open files" on NIXL pulls). One instance keeps its own.
func TestInstancesShareOneSideChannel(t *testing.T) {
	t.Parallel()
	cs := instanceConfigs(sim.DefaultConfig(), 3)
	require.NotNil(t, cs[0].SideChannel)
	for _, c := range cs[1:] {
		assert.Same(t, cs[0].SideChannel, c.SideChannel)
	}
	assert.Nil(t, instanceConfigs(sim.DefaultConfig(), 1)[0].SideChannel)
	gs := grpcInstanceConfigs(grpcsim.Config{}, 2)
	require.NotNil(t, gs[0].SideChannel)
	assert.Same(t, gs[0].SideChannel, gs[1].SideChannel)
	assert.Nil(t, grpcInstanceConfigs(grpcsim.Config{}, 1)[0].SideChannel)
}
