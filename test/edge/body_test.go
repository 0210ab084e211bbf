package edge_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
)

// openBody dials addr and sends the head of a chat completion announcing contentLength body
// bytes, followed by first (part of the body).
func openBody(t *testing.T, addr string, contentLength int64, first string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { c.Close() })
	_, err = fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", addr, contentLength, first)
	require.NoError(t, err)
	return c
}

// errorCode reads the seed's error body {"error":{"code":...}}.
func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(body, &e), "body %s", body)
	return e.Error.Code
}

// closedWithin reports whether the peer closes c within d (reads until EOF or an error).
func closedWithin(c net.Conn, r *bufio.Reader, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, r)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		return false
	}
	return true
}

func TestHugeAnnouncedBodyIsRefusedBeforeReading(t *testing.T) {
	t.Parallel()
	g := launch(t, nil, "--pd-disaggregation", "--log-level", "error")
	start := time.Now()
	c := openBody(t, g.addr, 1_000_000_000_000, `{"model":"m",`) // 1 TB announced, 13 bytes sent
	br := bufio.NewReader(c)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second))) // hang guard
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err, "the gateway must answer without waiting for the body")
	elapsed := time.Since(start)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestEntityTooLarge, resp.StatusCode)
	assert.Equal(t, "payload_too_large", resp.Header.Get("X-SMG-Error-Code"))
	assert.Equal(t, "payload_too_large", errorCode(t, body))
	assert.Less(t, elapsed, 5*time.Second, "answered while the body is still owed (hang bound)")
	assert.True(t, closedWithin(c, br, 5*time.Second), "the connection is closed after the 413")
	t.Logf("1 TB announced: 413 after %s", elapsed.Round(time.Millisecond))
}

func TestTricklingBodiesCostWhatTheySentAndAreCutAtTheDeadline(t *testing.T) {
	t.Parallel()
	const (
		conns    = 12
		announce = 500_000_000 // under the default --max-payload-size (512 MiB)
		deadline = 3 * time.Second
	)
	g := launch(t, nil, "--pd-disaggregation", "--log-level", "error", "--body-read-timeout-secs", "3")
	pid := g.cmd.Process.Pid
	// Warm the process (first request paths, GC pacing) before the baseline.
	for i := 0; i < 3; i++ {
		resp, err := http.Post("http://"+g.addr+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[]}`))
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	base, baseHeap := rssBytes(t, pid), heapAlloc(t, g.addr)

	results := make([]cutResult, conns)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	start := time.Now()
	for i := 0; i < conns; i++ {
		c := openBody(t, g.addr, announce, `{"model":"m","messages":[{"role":"user","content":"`)
		wg.Add(2)
		go func() { // trickle 1 KiB every 50 ms until the gateway gives up or the test ends
			defer wg.Done()
			chunk := strings.Repeat("a", 1024)
			tk := time.NewTicker(50 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tk.C:
					_ = c.SetWriteDeadline(time.Now().Add(time.Second))
					if _, err := io.WriteString(c, chunk); err != nil {
						return
					}
				}
			}
		}()
		go func(i int) {
			defer wg.Done()
			br := bufio.NewReader(c)
			_ = c.SetReadDeadline(time.Now().Add(deadline + 10*time.Second)) // hang guard
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				results[i] = cutResult{err: err}
				return
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			r := cutResult{status: resp.StatusCode, elapsed: time.Since(start), closed: closedWithin(c, br, 5*time.Second)}
			var e struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			if json.Unmarshal(body, &e) == nil {
				r.code = e.Error.Code
			}
			results[i] = r
		}(i)
	}
	var peak, peakHeap int64
	for time.Since(start) < deadline-200*time.Millisecond {
		peak = max(peak, rssBytes(t, pid))
		peakHeap = max(peakHeap, heapAlloc(t, g.addr))
		time.Sleep(100 * time.Millisecond)
	}
	close(stop)
	wg.Wait()

	grew := peak - base
	t.Logf("RSS: baseline %.1f MB, peak %.1f MB while %d connections announced %d MB each (+%.1f MB)",
		mb(base), mb(peak), conns, announce/1_000_000, mb(grew))
	assert.Less(t, grew, int64(50<<20), "RSS grew with the announced sizes, not the bytes received")
	// Fresh pages of an untouched reservation need not count in RSS; the Go heap shows the
	// reservation itself.
	t.Logf("Go heap allocated: baseline %.1f MB, peak %.1f MB", mb(baseHeap), mb(peakHeap))
	assert.Less(t, peakHeap-baseHeap, int64(50<<20), "the heap reserved the announced sizes")
	for i, r := range results {
		require.NoError(t, r.err, "connection %d", i)
		assert.Equal(t, http.StatusRequestTimeout, r.status, "connection %d", i)
		assert.Equal(t, "body_read_timeout", r.code, "connection %d", i)
		assert.True(t, r.closed, "connection %d is closed after the 408", i)
		assert.GreaterOrEqual(t, r.elapsed, deadline-200*time.Millisecond, "connection %d cut before the deadline", i)
		assert.Less(t, r.elapsed, deadline+5*time.Second, "connection %d outlived the deadline (hang bound)", i)
	}
	lo, hi := results[0].elapsed, results[0].elapsed
	for _, r := range results {
		lo, hi = min(lo, r.elapsed), max(hi, r.elapsed)
	}
	t.Logf("cut after %s .. %s (deadline %s)", lo.Round(time.Millisecond), hi.Round(time.Millisecond), deadline)
}

// cutResult is what one trickling connection got back.
type cutResult struct {
	status  int
	code    string
	elapsed time.Duration
	closed  bool
	err     error
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// heapAlloc is go_memstats_heap_alloc_bytes from the gateway's /metrics (main port).
func heapAlloc(t *testing.T, addr string) int64 {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go_memstats_heap_alloc_bytes "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			require.NoError(t, err)
			return int64(f)
		}
	}
	t.Fatal("no go_memstats_heap_alloc_bytes in /metrics")
	return 0
}

// The deadline also holds behind the debug access log's response-writer wrapper.
func TestBodyReadDeadlineBehindTheAccessLog(t *testing.T) {
	t.Parallel()
	cfg := fleet.DefaultConfig()
	cfg.LogLevel = "debug"
	cfg.BodyReadTimeout = time.Second
	g := fleet.StartGateway(t, cfg)
	addr := strings.TrimPrefix(g.URL, "http://")
	start := time.Now()
	c := openBody(t, addr, 1000, `{"model":`) // 1000 announced, 9 sent, then silence
	br := bufio.NewReader(c)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(10*time.Second))) // hang guard
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusRequestTimeout, resp.StatusCode, "%s", body)
	assert.Equal(t, "body_read_timeout", errorCode(t, body))
	assert.GreaterOrEqual(t, time.Since(start), 800*time.Millisecond)
	assert.True(t, closedWithin(c, br, 5*time.Second))
}
