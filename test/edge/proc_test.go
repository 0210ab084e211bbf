package edge_test

import (
	"bufio"
	"errors"
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
)

// gatewayProc is one `smg launch` process on a free loopback port.
type gatewayProc struct {
	cmd    *exec.Cmd
	addr   string // 127.0.0.1:<port>
	stderr *lockedBuffer
}

// lockedBuffer collects a child's output; safe to read while the child writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
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

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return p
}

// launch starts smg with args plus --host 127.0.0.1, a free --port and /metrics on the
// main port, waits (hang guard 15 s) for /liveness, and stops it with SIGTERM at cleanup.
func launch(t *testing.T, env []string, args ...string) *gatewayProc {
	t.Helper()
	port := strconv.Itoa(freePort(t))
	all := append([]string{"launch", "--host", "127.0.0.1", "--port", port, "--prometheus-port", "0"}, args...)
	g := &gatewayProc{cmd: exec.Command(smgBin, all...), addr: "127.0.0.1:" + port, stderr: &lockedBuffer{}}
	g.cmd.Stderr = g.stderr
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
	})
	require.Eventually(t, func() bool {
		resp, err := http.Get("http://" + g.addr + "/liveness")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 15*time.Second, 20*time.Millisecond, "smg never answered /liveness: %s", g.stderr)
	return g
}

// rssBytes is the resident set size of pid (VmRSS in /proc/<pid>/status).
func rssBytes(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			fields := strings.Fields(rest)
			require.Len(t, fields, 2)
			kb, err := strconv.ParseInt(fields[0], 10, 64)
			require.NoError(t, err)
			return kb << 10
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal(errors.New("no VmRSS line"))
	return 0
}

// runExit runs smg with args (hang guard 20 s) and returns its exit code and stderr.
func runExit(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(smgBin, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.Env = append(os.Environ(), env...)
	require.NoError(t, cmd.Start())
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode(), stderr.String()
		}
		require.NoError(t, err)
		return 0, stderr.String()
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("smg %v did not exit within 20 s: %s", args, stderr.String())
		return -1, ""
	}
}
