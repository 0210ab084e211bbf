package main_test

// End-to-end tests of the real binaries: `smg launch` drains on SIGTERM and exits 0, and
// `smg demo` serves a simulated fleet that is healthy and leaves no process behind.

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "smg-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, pkg := range []string{"github.com/smg-go/smg/cmd/smg", "github.com/smg-go/smg/cmd/smg-sim"} {
		out, err := exec.Command("go", "build", "-o", dir+"/", pkg).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "go build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
	binDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func needBinaries(t *testing.T) {
	t.Helper()
	if binDir == "" {
		t.Skip("end-to-end: binaries are not built with -short")
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return p
}

// waitExit waits (hang guard 30 s) for cmd and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		require.NoError(t, err)
		return 0
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("process did not exit within 30s")
		return -1
	}
}

func TestLaunchExitsZeroOnSIGTERM(t *testing.T) {
	needBinaries(t)
	t.Parallel()
	port := strconv.Itoa(freePort(t))
	cmd := exec.Command(filepath.Join(binDir, "smg"), "launch", "--pd-disaggregation", "--host", "127.0.0.1",
		"--port", port, "--prometheus-port", "0", "--log-level", "error", "--shutdown-drain-delay-secs", "0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	base := "http://127.0.0.1:" + port
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/liveness")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "smg launch never answered /liveness")

	resp, err := http.Get(base + "/readiness")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "PD mode without workers is not ready")

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.Equal(t, 0, waitExit(t, cmd), stderr.String())
}

func TestBadFlagExitsTwoWithOneLine(t *testing.T) {
	needBinaries(t)
	t.Parallel()
	cmd := exec.Command(filepath.Join(binDir, "smg"), "launch", "--pd-disaggregation", "--prefill", "http://p:8000", "0")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	assert.Equal(t, 2, waitExit(t, cmd))
	assert.Equal(t, "smg: invalid value for --prefill: http://p:8000: bootstrap port must be between 1 and 65535 (got 0)\n", stderr.String())
}

type workerInfo struct {
	URL           string `json:"url"`
	WorkerType    string `json:"worker_type"`
	RuntimeType   string `json:"runtime_type"`
	IsHealthy     bool   `json:"is_healthy"`
	BootstrapPort *int   `json:"bootstrap_port"`
	KVConnector   string `json:"kv_connector"`
}

func TestDemoFleet(t *testing.T) {
	needBinaries(t)
	for _, engine := range []string{"sglang", "vllm"} {
		t.Run(engine, func(t *testing.T) {
			port := strconv.Itoa(freePort(t))
			cmd := exec.Command(filepath.Join(binDir, "smg"), "demo", "--engine", engine, "--port", port)
			stdout, err := cmd.StdoutPipe()
			require.NoError(t, err)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			require.NoError(t, cmd.Start())
			defer func() { _ = cmd.Process.Kill() }()

			banner := readUntil(t, stdout, "Press Ctrl-C to stop.", 20*time.Second, &stderr)
			go func() { _, _ = io.Copy(io.Discard, stdout) }()
			base := "http://127.0.0.1:" + port
			assert.Contains(t, banner, "curl -s "+base+"/v1/chat/completions")
			assert.Contains(t, banner, "curl -s "+base+"/workers | jq '.workers[] | {url, worker_type, is_healthy, pd_pairing}'")

			resp, err := http.Get(base + "/readiness")
			require.NoError(t, err)
			resp.Body.Close()
			assert.Equal(t, http.StatusOK, resp.StatusCode)

			resp, err = http.Get(base + "/workers")
			require.NoError(t, err)
			var list struct {
				Workers []workerInfo `json:"workers"`
			}
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&list))
			resp.Body.Close()
			require.Len(t, list.Workers, 4)
			roles := map[string]int{}
			for _, w := range list.Workers {
				roles[w.WorkerType]++
				assert.True(t, w.IsHealthy, w.URL)
				assert.Equal(t, engine, w.RuntimeType, w.URL)
				assert.True(t, strings.HasPrefix(w.URL, "http://127.0.0.1:"), w.URL)
				assert.Contains(t, banner, w.URL)
				switch {
				case engine == "sglang" && w.WorkerType == "prefill":
					require.NotNil(t, w.BootstrapPort, w.URL)
					assert.Contains(t, banner, w.URL+"  bootstrap_port "+strconv.Itoa(*w.BootstrapPort))
				case engine == "vllm":
					assert.Equal(t, "NixlConnector", w.KVConnector, w.URL)
				}
			}
			assert.Equal(t, map[string]int{"prefill": 2, "decode": 2}, roles)

			// The banner's chat completion goes through a prefill/decode pair.
			chat := `{"model": "sim-model", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16}`
			resp, err = http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(chat))
			require.NoError(t, err)
			var completion struct {
				Choices []struct {
					Message      struct{ Content string } `json:"message"`
					FinishReason string                   `json:"finish_reason"`
				} `json:"choices"`
				Usage struct {
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
			}
			require.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&completion))
			resp.Body.Close()
			require.Len(t, completion.Choices, 1)
			assert.NotEmpty(t, completion.Choices[0].Message.Content)
			assert.Equal(t, "length", completion.Choices[0].FinishReason)
			assert.Equal(t, 16, completion.Usage.CompletionTokens)

			resp, err = http.Get(base + "/metrics")
			require.NoError(t, err)
			metricsText, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.NoError(t, err)
			assert.Contains(t, string(metricsText), `smg_pd_ttft_seconds_count{backend_type="pd",model="sim-model",runtime="`+engine+`"} 1`)
			nixl := "0"
			if engine == "vllm" {
				nixl = "1"
			}
			assert.Contains(t, string(metricsText), `smg_pd_kv_connector_mode_total{mode="nixl"} `+nixl)

			children := childPIDs(cmd.Process.Pid)
			assert.Len(t, children, 4, "one smg-sim process per worker")
			require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
			assert.Equal(t, 0, waitExit(t, cmd), stderr.String())
			for _, pid := range children {
				assert.ErrorIs(t, syscall.Kill(pid, 0), syscall.ESRCH, "smg-sim pid %d outlived smg demo", pid)
			}
			for _, w := range list.Workers {
				_, err := net.DialTimeout("tcp", strings.TrimPrefix(w.URL, "http://"), time.Second)
				assert.Error(t, err, "%s still accepts connections", w.URL)
			}
		})
	}
}

// readUntil reads r line by line until a line contains marker (hang guard: timeout).
func readUntil(t *testing.T, r io.Reader, marker string, timeout time.Duration, stderr fmt.Stringer) string {
	t.Helper()
	got := make(chan string, 1)
	go func() {
		var b strings.Builder
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), marker) {
				break
			}
		}
		got <- b.String()
	}()
	select {
	case s := <-got:
		require.Contains(t, s, marker, "stderr: %s", stderr.String())
		return s
	case <-time.After(timeout):
		t.Fatalf("no %q within %s; stderr: %s", marker, timeout, stderr.String())
		return ""
	}
}

// childPIDs lists the direct children of pid (every thread's /proc children file, Linux).
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var pids []int
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, s := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(s); err == nil {
				pids = append(pids, n)
			}
		}
	}
	return pids
}
