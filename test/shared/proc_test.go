package shared_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Bounds of the suite's waits (hang guards, not timing assertions).
const (
	startTimeout = 20 * time.Second // process start to ready fleet
	stopTimeout  = 10 * time.Second // SIGTERM to exit, before SIGKILL
	reqTimeout   = 30 * time.Second // one request
)

// smg is one gateway process.
type smg struct {
	name string
	URL  string
	cmd  *exec.Cmd
	out  *logBuf
	done chan struct{}
	err  error
}

// logBuf collects a process's output and reports the address of its "smg listening" line.
type logBuf struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	addr  chan string
	found bool
}

func (l *logBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if !l.found {
		for _, line := range strings.Split(l.buf.String(), "\n") {
			var rec struct {
				Msg  string `json:"msg"`
				Addr string `json:"addr"`
			}
			if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "smg listening" && rec.Addr != "" {
				l.found = true
				l.addr <- rec.Addr
				break
			}
		}
	}
	return len(p), nil
}

func (l *logBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// startSMG starts `smg launch` in PD mode on a free loopback port with the given extra
// flags, in front of prefill p and decode(s) ds (startup workers), and waits until it
// listens, every worker is healthy and detected, and /readiness answers 200. The process
// gets SIGTERM at cleanup (SIGKILL after stopTimeout). Environment variables SMG_* of the
// test process are not passed on.
func startSMG(t *testing.T, name string, p *sim.Server, ds []*sim.Server, flags ...string) *smg {
	t.Helper()
	args := []string{"launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
		"--prometheus-port", "0", "--log-level", "info", "--shutdown-grace-period-secs", "1", "--shutdown-drain-delay-secs", "0",
		"--prefill", p.URL(), strconv.Itoa(p.BootstrapPort())}
	for _, d := range ds {
		args = append(args, "--decode", d.URL())
	}
	args = append(args, flags...)
	s := launch(t, name, args...)
	s.waitReady(t, 1+len(ds))
	return s
}

// launch starts `smg` with args and returns once it listens (the "smg listening" line), with
// the cleanup of startSMG.
func launch(t *testing.T, name string, args ...string) *smg {
	t.Helper()
	out := &logBuf{addr: make(chan string, 1)}
	cmd := exec.Command(smgBin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = cleanEnv()
	require.NoError(t, cmd.Start())
	s := &smg{name: name, cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	t.Cleanup(func() {
		select {
		case <-s.done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-s.done
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", name, tail(out.String(), 4000))
		}
	})
	select {
	case addr := <-out.addr:
		s.URL = "http://" + addr
	case <-s.done:
		t.Fatalf("%s exited: %v\n%s", name, s.err, out.String())
	case <-time.After(startTimeout):
		t.Fatalf("%s did not listen within %s:\n%s", name, startTimeout, out.String())
	}
	return s
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// cleanEnv is the test's environment without SMG_* variables.
func cleanEnv() []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SMG_") {
			out = append(out, kv)
		}
	}
	return out
}

// kill sends SIGKILL and waits for the process to be gone.
func (s *smg) kill(t *testing.T) {
	t.Helper()
	require.NoError(t, s.cmd.Process.Kill())
	<-s.done
}

// waitReady waits until n workers are healthy and detected (the `version` label detection
// copies from /get_server_info is set) and /readiness is 200.
func (s *smg) waitReady(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(startTimeout)
	for {
		ws, err := s.workers()
		ready := err == nil && len(ws) == n
		for _, w := range ws {
			ready = ready && w.IsHealthy && w.Labels["version"] != ""
		}
		if ready {
			if r, err := s.get("/readiness"); err == nil && r.Status == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fleet not ready within %s: %+v %v", s.name, startTimeout, ws, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

type workerInfo struct {
	ID         string            `json:"id"`
	URL        string            `json:"url"`
	WorkerType string            `json:"worker_type"`
	IsHealthy  bool              `json:"is_healthy"`
	Labels     map[string]string `json:"labels"`
}

func (s *smg) workers() ([]workerInfo, error) {
	r, err := s.get("/workers")
	if err != nil {
		return nil, err
	}
	var l struct {
		Workers []workerInfo `json:"workers"`
	}
	if err := json.Unmarshal(r.Body, &l); err != nil {
		return nil, err
	}
	return l.Workers, nil
}

// client is the suite's HTTP client (one transport for every gateway, closed at the end of
// each test by the tests that use it).
var client = &http.Client{Timeout: reqTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 512}}

func (s *smg) get(path string) (*fleet.Response, error) {
	req, err := http.NewRequest(http.MethodGet, s.URL+path, nil)
	if err != nil {
		return nil, err
	}
	return do(req)
}

// post sends body to path with the extra headers; safe in goroutines.
func (s *smg) post(ctx context.Context, path string, body any, hdr http.Header) (*fleet.Response, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+path, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range hdr {
		req.Header[k] = v
	}
	return do(req)
}

func do(req *http.Request) (*fleet.Response, error) {
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	return &fleet.Response{Status: resp.StatusCode, Header: resp.Header, Body: b.Bytes(), Elapsed: time.Since(start)}, nil
}

// metrics scrapes the gateway's /metrics (served on the main port with --prometheus-port 0).
func (s *smg) metrics(t *testing.T) fleet.Metrics {
	t.Helper()
	r, err := s.get("/metrics")
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, r.Status)
	m, err := fleet.ParseMetrics(r.Body)
	require.NoError(t, err)
	return m
}

// generate is a SGLang /generate body for text with maxTokens output tokens.
func generate(text string, maxTokens int) map[string]any {
	return map[string]any{"text": text, "sampling_params": map[string]any{"max_new_tokens": maxTokens}}
}

// result is one request's outcome.
type result struct {
	gw   string
	resp *fleet.Response
	err  error
}

// fire sends n requests at once (released together), request i to gws[i%len(gws)], and
// returns the outcomes in order.
func fire(ctx context.Context, gws []*smg, n int, body func(i int) map[string]any) []result {
	out := make([]result, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		g := gws[i%len(gws)]
		b := body(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := g.post(ctx, "/generate", b, nil)
			out[i] = result{gw: g.name, resp: r, err: err}
		}()
	}
	close(start)
	wg.Wait()
	return out
}

// eventually polls cond every 10 ms until it holds or bound passes (a hang guard).
func eventually(t *testing.T, bound time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", bound, fmt.Sprintf(msg, args...))
		}
		time.Sleep(10 * time.Millisecond)
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
