package httpengine_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/httpengine"
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
