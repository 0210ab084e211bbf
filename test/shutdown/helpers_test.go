package shutdown_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
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

// Hang guards of the suite (not timing assertions).
const (
	startTimeout = 20 * time.Second // process start to ready fleet
	exitTimeout  = 30 * time.Second // SIGTERM to exit, before SIGKILL
	reqTimeout   = 60 * time.Second // one request
)

// gateway is one `smg launch` process.
type gateway struct {
	URL  string
	Addr string
	cmd  *exec.Cmd
	out  *logBuf
	done chan struct{}
	// code and exited are set when done is closed.
	code   int
	exited time.Time
}

// logBuf collects the process's output and reports the address of its "smg listening" line.
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

// startFleet starts one prefill and one decode simulator of engine (sim.EngineSGLang or
// sim.EngineVLLM with NIXL) on loopback; the decode spends itl per output token, so a
// request for n tokens lasts about n × itl.
func startFleet(t *testing.T, engine string, itl time.Duration) (prefill, decode *sim.Server) {
	t.Helper()
	prefill = fleet.StartSim(t, sim.Config{Engine: engine, Role: sim.RolePrefill})
	decode = fleet.StartSim(t, sim.Config{Engine: engine, Role: sim.RoleDecode, ITL: itl})
	return prefill, decode
}

// launch starts `smg launch` in PD mode on a free loopback port in front of prefill and
// decode, with the given extra flags, and waits until both workers are healthy and
// /readiness answers 200. SGLang workers are startup workers (--prefill, --decode); vLLM
// workers are registered with POST /workers (their kv_connector). At cleanup a process
// still running is killed.
func launch(t *testing.T, prefill, decode *sim.Server, flags ...string) *gateway {
	t.Helper()
	args := []string{"launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
		"--prometheus-port", "0", "--log-level", "info", "--policy", "round_robin",
		"--health-check-interval-secs", "0.25", "--health-success-threshold", "1"}
	sglang := prefill.Config().Engine == sim.EngineSGLang
	if sglang {
		args = append(args, "--prefill", prefill.URL(), strconv.Itoa(prefill.BootstrapPort()), "--decode", decode.URL())
	}
	args = append(args, flags...)
	out := &logBuf{addr: make(chan string, 1)}
	cmd := exec.Command(smgBin, args...)
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = cleanEnv()
	require.NoError(t, cmd.Start())
	g := &gateway{cmd: cmd, out: out, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		g.exited = time.Now()
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			g.code = ee.ExitCode()
		case err != nil:
			g.code = -1
		}
		close(g.done)
	}()
	t.Cleanup(func() {
		select {
		case <-g.done:
		default:
			_ = cmd.Process.Kill()
			<-g.done
		}
		if t.Failed() {
			t.Logf("smg output:\n%s", tail(out.String(), 6000))
		}
	})
	select {
	case g.Addr = <-out.addr:
		g.URL = "http://" + g.Addr
	case <-g.done:
		t.Fatalf("smg exited (code %d):\n%s", g.code, out.String())
	case <-time.After(startTimeout):
		t.Fatalf("smg did not listen within %s:\n%s", startTimeout, out.String())
	}
	c := newClient()
	defer c.CloseIdleConnections()
	if !sglang {
		for _, s := range []*sim.Server{prefill, decode} {
			b, _ := json.Marshal(fleet.WorkerSpec(s))
			resp, err := c.Post(g.URL+"/workers", "application/json", bytes.NewReader(b))
			require.NoError(t, err)
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			require.Equal(t, http.StatusAccepted, resp.StatusCode, "POST /workers: %s", body)
		}
	}
	deadline := time.Now().Add(startTimeout)
	for {
		if st, _ := readiness(c, g.URL); st == http.StatusOK {
			return g
		}
		if time.Now().After(deadline) {
			t.Fatalf("smg not ready within %s:\n%s", startTimeout, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// sigterm sends SIGTERM and returns when it was sent.
func (g *gateway) sigterm(t *testing.T) time.Time {
	t.Helper()
	require.NoError(t, g.cmd.Process.Signal(syscall.SIGTERM))
	return time.Now()
}

// wait waits (exitTimeout) for the process to exit and returns its exit code and when.
func (g *gateway) wait(t *testing.T) (int, time.Time) {
	t.Helper()
	select {
	case <-g.done:
		return g.code, g.exited
	case <-time.After(exitTimeout):
		t.Fatalf("smg did not exit within %s of SIGTERM", exitTimeout)
		return 0, time.Time{}
	}
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

// newClient is a client with its own transport (close its idle connections when done).
func newClient() *http.Client {
	return &http.Client{Timeout: reqTimeout, Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}
}

// readiness GETs /readiness and returns its status and reason (status 0 when the request
// failed).
func readiness(c *http.Client, base string) (int, string) {
	resp, err := c.Get(base + "/readiness")
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	var body struct {
		Reason string `json:"reason"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&body)
	return resp.StatusCode, body.Reason
}

// chatPath is the route the suite sends, served by both engines.
const chatPath = "/v1/chat/completions"

// chat is an OpenAI chat completion body asking for tokens output tokens.
func chat(tokens int, stream bool) []byte {
	b, _ := json.Marshal(map[string]any{"model": "sim-model", "stream": stream, "max_tokens": tokens,
		"messages": []map[string]any{{"role": "user", "content": "tell me a long story"}}})
	return b
}

// call is one request sent in the background: Started closes when the response head and
// (for a stream) its first bytes arrived, Done when the body ended.
type call struct {
	Started, Done chan struct{}
	Status        int
	Header        http.Header
	Body          []byte
	Err           error
	End           time.Time
}

// send POSTs body to base+path on its own goroutine.
func send(c *http.Client, base, path string, body []byte) *call {
	k := &call{Started: make(chan struct{}), Done: make(chan struct{})}
	go func() {
		defer close(k.Done)
		started := false
		start := func() {
			if !started {
				started = true
				close(k.Started)
			}
		}
		defer start()
		resp, err := c.Post(base+path, "application/json", bytes.NewReader(body))
		if err != nil {
			k.Err, k.End = err, time.Now()
			return
		}
		defer resp.Body.Close()
		k.Status, k.Header = resp.StatusCode, resp.Header
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				k.Body = append(k.Body, buf[:n]...)
				start()
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					k.Err = err
				}
				k.End = time.Now()
				return
			}
		}
	}()
	return k
}

// waitAll waits (hang guard) until every channel of chans is closed.
func waitAll(t *testing.T, what string, timeout time.Duration, chans ...chan struct{}) {
	t.Helper()
	deadline := time.After(timeout)
	for i, ch := range chans {
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("%s: %d of %d not done within %s", what, len(chans)-i, len(chans), timeout)
		}
	}
}

// waitFor polls cond every 10 ms until it holds (hang guard timeout).
func waitFor(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %s", what, timeout)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
