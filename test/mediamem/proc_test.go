package mediamem_test

import (
	"bufio"
	"bytes"
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
	"go.uber.org/goleak"

	"github.com/smg-go/smg/test/fleet"
)

// smgBin is the gateway binary built by TestMain.
var smgBin string

func TestMain(m *testing.M) {
	bin, cleanup, err := fleet.BuildSMG()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	smgBin = bin
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		cleanup()
		os.Exit(code)
	}))
}

// lockedBuffer collects a child's output; safe to read while the child writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gateway is one `smg launch` child on a free loopback port.
type gateway struct {
	cmd  *exec.Cmd
	url  string
	logs *lockedBuffer
	// readyRSS is the peak resident set when the gateway first answered /readiness, bytes:
	// the binary, runtime and start-up state, which the media budget does not govern.
	readyRSS int64
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return p
}

// launch starts `smg launch` with args on 127.0.0.1 and waits (hang guard 30 s) until
// /readiness answers 200; the child gets SIGTERM at cleanup (SIGKILL after 20 s).
func launch(t *testing.T, env []string, args ...string) *gateway {
	t.Helper()
	port := strconv.Itoa(freePort(t))
	all := append([]string{"launch", "--host", "127.0.0.1", "--port", port, "--prometheus-port", "0",
		"--shutdown-grace-period-secs", "1", "--shutdown-drain-delay-secs", "0", "--log-flush-interval-ms", "0"}, args...)
	g := &gateway{cmd: exec.Command(smgBin, all...), url: "http://127.0.0.1:" + port, logs: &lockedBuffer{}}
	g.cmd.Stdout, g.cmd.Stderr = g.logs, g.logs
	g.cmd.Env = append(os.Environ(), env...)
	require.NoError(t, g.cmd.Start())
	done := make(chan struct{})
	go func() { _ = g.cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = g.cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			out := g.logs.String()
			t.Logf("smg output (tail):\n%s", out[max(0, len(out)-4000):])
		}
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get(g.url + "/readiness")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 30*time.Second, 50*time.Millisecond, "smg never became ready")
	g.readyRSS = g.peakRSS(t)
	return g
}

// mediaRSS is how far the gateway's peak resident set rose above its ready state, bytes:
// what media preparation (and the requests around it) cost, independent of the binary's
// own size.
func (g *gateway) mediaRSS(t *testing.T) int64 {
	t.Helper()
	return g.peakRSS(t) - g.readyRSS
}

// peakRSS is the child's peak resident set (VmHWM in /proc/<pid>/status), bytes.
func (g *gateway) peakRSS(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(g.cmd.Process.Pid) + "/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			fields := strings.Fields(rest)
			require.Len(t, fields, 2)
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("no VmHWM line")
	return 0
}

// answer is one response: status, Retry-After, and the seed's error body.
type answer struct {
	status     int
	retryAfter string
	code, msg  string
	err        error
}

var client = &http.Client{Timeout: 90 * time.Second}

// post sends a chat completion and reads the answer.
func (g *gateway) post(body []byte) answer {
	resp, err := client.Post(g.url+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		return answer{err: err}
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&e)
	return answer{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), code: e.Error.Code, msg: e.Error.Message}
}

// chat is a one-image chat request body for model.
func chat(model, imageURL string) []byte {
	b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 2, "messages": []any{
		map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "image_url", "image_url": map[string]any{"url": imageURL}},
			map[string]any{"type": "text", "text": "What is it?"},
		}},
	}})
	return b
}
