package httpengine_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/httpengine"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// rawEngine serves each accepted connection with answer after reading one request from it
// (for at most conns connections); answer writes whatever bytes a hostile engine would.
func rawEngine(t *testing.T, conns int, answer func(i int, conn net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for i := range conns {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				req, err := http.ReadRequest(bufio.NewReader(conn))
				if err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, req.Body)
				answer(i, conn)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// A response head larger than net/http's transport accepts (10 MiB, its default
// MaxResponseHeaderBytes) fails the leg instead of being buffered whole: a hostile or
// broken engine streaming an endless header line must not grow the gateway's memory.
func TestHugeResponseHeadIsRefused(t *testing.T) {
	t.Parallel()
	url := rawEngine(t, 1, func(_ int, conn net.Conn) {
		_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Big: ")
		chunk := strings.Repeat("a", 64<<10)
		for range (11 << 20) / len(chunk) {
			if _, err := io.WriteString(conn, chunk); err != nil {
				return
			}
		}
		_, _ = io.WriteString(conn, "\r\nContent-Length: 2\r\n\r\nok")
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := send(t, c, ctx, url, "/generate", nil)
	if err == nil {
		_ = resp.Body.Close()
	}
	require.Error(t, err)
	assert.Contains(t, err.Error(), "exceeded")
}

// earlyAnswerEngine answers every request with a 401 as soon as it has read the request
// head, never reading the body (an auth or size check in front of the engine); it keeps
// the connection open without reading further, or closes it when closeAfter.
func earlyAnswerEngine(t *testing.T, closeAfter bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); _ = ln.Close() })
	go func() {
		for range 4 {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for range 64 { // the head's lines, up to the blank one
					l, err := br.ReadString('\n')
					if err != nil || l == "\r\n" {
						break
					}
				}
				_, _ = io.WriteString(conn, "HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"error\":\"no\"}")
				if !closeAfter {
					<-stop
				}
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// An engine that answers before reading a large request body (more than the socket
// buffers hold) gets its answer relayed, as net/http's transport relays it, instead of the
// leg blocking on the write until its deadline or failing with the write's reset.
func TestEarlyAnswerToALargeBodyIsReturned(t *testing.T) {
	t.Parallel()
	body := []byte(`{"prompt":"` + strings.Repeat("a", 32<<20) + `"}`)
	for _, closeAfter := range []bool{false, true} {
		url := earlyAnswerEngine(t, closeAfter)
		c := httpengine.New(httpengine.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		l := worker.NewLive(worker.Worker{URL: url}, worker.StatusReady)
		resp, err := c.Send(ctx, ports.LegRequest{Worker: l, Path: "/generate", Body: body})
		require.NoError(t, err, "engine closes after answering: %v", closeAfter)
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		cancel()
		c.CloseIdle()
		require.NoError(t, err)
		assert.Equal(t, http.StatusUnauthorized, resp.Status)
		assert.JSONEq(t, `{"error":"no"}`, string(b))
	}
}

// An invalid header on a leg whose large body is written beside the head read fails the
// leg at once with the header error, as on a small one: nothing waits for an answer to
// the incomplete request.
func TestInvalidHeaderWithALargeBodyIsRefused(t *testing.T) {
	t.Parallel()
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := worker.NewLive(worker.Worker{URL: srv.URL, APIKey: "k\r\nX-Evil: 1"}, worker.StatusReady)
	body := []byte(`{"prompt":"` + strings.Repeat("a", 1<<20) + `"}`)
	_, err := c.Send(ctx, ports.LegRequest{Worker: l, Path: "/generate", Body: body})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid header field value")
	require.NoError(t, ctx.Err())
}

// Legs with large bodies reuse their connection once the answer and the write are both
// done, and each gets its own answer.
func TestLargeBodiesReuseTheConnection(t *testing.T) {
	t.Parallel()
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		_, _ = io.WriteString(w, strconv.FormatInt(n, 10))
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	l := worker.NewLive(worker.Worker{URL: srv.URL}, worker.StatusReady)
	for i := range 10 {
		body := []byte(strings.Repeat("a", 256<<10+i))
		resp, err := c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/generate", Body: body})
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, strconv.Itoa(len(body)), string(b))
	}
	assert.EqualValues(t, 1, cc.opened.Load())
}

// A 101 Switching Protocols answer fails the leg with an error that says so (a leg never
// asks for an upgrade), not as if the engine had sent too many interim answers.
func TestSwitchingProtocolsFailsTheLeg(t *testing.T) {
	t.Parallel()
	url := rawEngine(t, 1, func(_ int, conn net.Conn) {
		_, _ = io.WriteString(conn, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n")
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	_, err := send(t, c, context.Background(), url, "/generate", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "101 Switching Protocols")
}
