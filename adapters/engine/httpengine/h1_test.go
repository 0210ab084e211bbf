package httpengine_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/httpengine"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// connCounter counts the connections a test server accepted and closed.
type connCounter struct{ opened, closed atomic.Int32 }

func (c *connCounter) track(_ net.Conn, s http.ConnState) {
	switch s {
	case http.StateNew:
		c.opened.Add(1)
	case http.StateClosed, http.StateHijacked:
		c.closed.Add(1)
	}
}

func countedServer(t *testing.T, h http.HandlerFunc) (*httptest.Server, *connCounter) {
	t.Helper()
	cc := &connCounter{}
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = cc.track
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, cc
}

func send(t *testing.T, c *httpengine.Client, ctx context.Context, url, path string, h http.Header) (*ports.LegResponse, error) {
	t.Helper()
	l := worker.NewLive(worker.Worker{URL: url}, worker.StatusReady)
	return c.Send(ctx, ports.LegRequest{Worker: l, Path: path, Body: []byte(`{"x":1}`), Header: h})
}

// engineSawAbort waits (5 s at most) for a test engine's handler to see its request's
// context end, which net/http's server reports when the client closed the connection.
func engineSawAbort(t *testing.T, aborted <-chan struct{}) {
	t.Helper()
	select {
	case <-aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("the engine never saw the leg abort")
	}
}

// legToEnd sends a leg and reads its answer to the end, as the relay does.
func legToEnd(t *testing.T, c *httpengine.Client, url, path string) {
	t.Helper()
	resp, err := send(t, c, context.Background(), url, path, nil)
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	require.NoError(t, resp.Body.Close())
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 5 s: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Legs whose bodies are read to the end reuse one keep-alive connection.
func TestLegsReuseOneConnection(t *testing.T) {
	t.Parallel()
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte(`{"ok":true}`))
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	for i := range 20 {
		resp, err := send(t, c, context.Background(), srv.URL, "/generate", nil)
		require.NoError(t, err, "leg %d", i)
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		require.NoError(t, resp.Body.Close())
		assert.Equal(t, `{"ok":true}`, string(b))
	}
	assert.EqualValues(t, 1, cc.opened.Load())
}

// An idle connection the engine closed (uvicorn's keep-alive timeout) is not used again: the
// next leg dials a new one and succeeds.
func TestIdleConnectionClosedByTheEngineIsNotReused(t *testing.T) {
	t.Parallel()
	cc := &connCounter{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`ok`))
	}))
	srv.Config.ConnState = cc.track
	srv.Config.IdleTimeout = 50 * time.Millisecond
	srv.Start()
	defer srv.Close()
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	for i := range 3 {
		resp, err := send(t, c, context.Background(), srv.URL, "/generate", nil)
		require.NoError(t, err, "leg %d", i)
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		want := int32(i + 1)
		waitFor(t, "the engine closes the idle connection", func() bool { return cc.closed.Load() == want })
	}
	assert.EqualValues(t, 3, cc.opened.Load())
}

// A body closed before its end closes the connection: the engine sees the leg abort and the
// next leg gets a fresh connection.
func TestBodyClosedEarlyAbortsTheLeg(t *testing.T) {
	t.Parallel()
	aborted := make(chan struct{})
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/short" {
			_, _ = w.Write([]byte(`ok`))
			return
		}
		_, _ = w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(aborted)
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	resp, err := send(t, c, context.Background(), srv.URL, "/stream", nil)
	require.NoError(t, err)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: 1\n", line)
	require.NoError(t, resp.Body.Close())
	engineSawAbort(t, aborted)
	_, err = resp.Body.Read(make([]byte, 8))
	assert.Error(t, err, "a closed body reads nothing")
	legToEnd(t, c, srv.URL, "/short")
	assert.EqualValues(t, 2, cc.opened.Load())
}

// Cancelling while the engine has not answered returns the context's error at once and
// shows the engine a closed connection.
func TestCancelBeforeTheHeadReturnsPromptly(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // as an engine does: the server then watches the connection
		select {
		case <-r.Context().Done():
			close(gone)
		case <-time.After(10 * time.Second):
		}
	})
	c := httpengine.New(httpengine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	resp, err := send(t, c, ctx, srv.URL, "/generate", nil)
	assert.Nil(t, resp)
	require.ErrorIs(t, err, context.Canceled)
	assert.Less(t, time.Since(start), 3*time.Second)
	engineSawAbort(t, gone)
}

// A leg deadline passing before the head is the context's DeadlineExceeded.
func TestDeadlineBeforeTheHeadIsDeadlineExceeded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := httpengine.New(httpengine.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := send(t, c, ctx, srv.URL, "/generate", nil)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Less(t, time.Since(start), 3*time.Second)
}

// FirstByteTimeout bounds the wait for the head, worded as net/http words it.
func TestFirstByteTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	defer close(release)
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	c := httpengine.New(httpengine.Options{FirstByteTimeout: 150 * time.Millisecond})
	start := time.Now()
	_, err := send(t, c, context.Background(), srv.URL, "/generate", nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timeout awaiting response headers")
	assert.Less(t, time.Since(start), 3*time.Second)
}

// A chunked SSE body is relayed as it is written: the first event is readable before the
// engine writes the second. Read to its end, the connection is reused.
func TestStreamedBodyArrivesIncrementally(t *testing.T) {
	t.Parallel()
	next := make(chan struct{})
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		if r.URL.Path == "/stream" {
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
		}
		_, _ = w.Write([]byte("data: [DONE]\n\n"))
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	resp, err := send(t, c, context.Background(), srv.URL, "/stream", nil)
	require.NoError(t, err)
	assert.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "data: 1\n", line)
	close(next)
	rest, err := io.ReadAll(br)
	require.NoError(t, err)
	assert.Equal(t, "\ndata: [DONE]\n\n", string(rest))
	require.NoError(t, resp.Body.Close())
	legToEnd(t, c, srv.URL, "/again")
	assert.EqualValues(t, 1, cc.opened.Load())
}

// An engine answering "Connection: close" gets a new connection for the next leg.
func TestConnectionCloseIsHonoured(t *testing.T) {
	t.Parallel()
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = w.Write([]byte(`ok`))
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	for range 2 {
		legToEnd(t, c, srv.URL, "/generate")
	}
	assert.EqualValues(t, 2, cc.opened.Load())
}

// A worker api key with a line break is refused before anything is sent.
func TestInvalidHeaderValueIsRefused(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) { hits.Add(1) })
	c := httpengine.New(httpengine.Options{})
	l := worker.NewLive(worker.Worker{URL: srv.URL, APIKey: "k\r\nX-Evil: 1"}, worker.StatusReady)
	_, err := c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/generate", Body: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid header field value")
	assert.EqualValues(t, 0, hits.Load())
}

// Framing and hop-by-hop headers are the client's own; other forwarded headers pass, and
// injected trace context replaces a forwarded one.
func TestForwardedHeaders(t *testing.T) {
	t.Parallel()
	var got http.Header
	var gotBody string
	var gotHost string
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		got, gotHost = r.Header.Clone(), r.Host
		b, _ := io.ReadAll(r.Body)
		gotBody = string(b)
	})
	c := httpengine.New(httpengine.Options{InjectHeaders: func(_ context.Context, h http.Header) {
		h.Set("Traceparent", "00-new-01")
	}})
	resp, err := send(t, c, context.Background(), srv.URL, "/generate", http.Header{
		"X-Request-Id": {"rid-7"}, "Traceparent": {"00-old-01"}, "Content-Length": {"999"},
		"Transfer-Encoding": {"chunked"}, "Connection": {"close"}, "Host": {"evil"}, "Expect": {"100-continue"},
	})
	require.NoError(t, err)
	_, _ = io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, `{"x":1}`, gotBody)
	assert.Equal(t, strings.TrimPrefix(srv.URL, "http://"), gotHost)
	assert.Equal(t, "rid-7", got.Get("X-Request-Id"))
	assert.Equal(t, []string{"00-new-01"}, got.Values("Traceparent"))
	assert.Equal(t, "application/json", got.Get("Content-Type"))
	assert.Empty(t, got.Get("Connection"))
	assert.Empty(t, got.Get("Expect"))
}

// A worker URL with a path prefix gets the leg path appended to it.
func TestWorkerURLPathPrefix(t *testing.T) {
	t.Parallel()
	var path string
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) { path = r.URL.Path })
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	resp, err := send(t, c, context.Background(), srv.URL+"/engine/", "/v1/completions", nil)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, "/engine/v1/completions", path)
}

// Interim 1xx answers are skipped as net/http's transport skips them.
func TestInterimResponsesAreSkipped(t *testing.T) {
	t.Parallel()
	url := rawEngine(t, 1, func(_ int, conn net.Conn) {
		_, _ = io.WriteString(conn, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </x>\r\n\r\n"+
			"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	})
	c := httpengine.New(httpengine.Options{})
	resp, err := send(t, c, context.Background(), url, "/generate", nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, 200, resp.Status)
	assert.Equal(t, "ok", string(b))
}

// An engine that closes the connection without answering fails the leg with EOF, as
// net/http reports it.
func TestEngineClosingWithoutAnswerIsEOF(t *testing.T) {
	t.Parallel()
	url := rawEngine(t, 1, func(int, net.Conn) {}) // the connection closes unanswered
	c := httpengine.New(httpengine.Options{})
	_, err := send(t, c, context.Background(), url, "/generate", nil)
	require.Error(t, err)
	assert.True(t, errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF), "%v", err)
}

// Idle pooled connections are closed after IdleConnTimeout without further legs.
func TestIdleConnectionsAreSwept(t *testing.T) {
	t.Parallel()
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`ok`)) })
	c := httpengine.New(httpengine.Options{IdleConnTimeout: 100 * time.Millisecond})
	legToEnd(t, c, srv.URL, "/generate")
	waitFor(t, "the idle connection is closed", func() bool { return cc.closed.Load() == 1 })
}

// Concurrent legs over shared connections each get their own answer.
func TestConcurrentLegsGetTheirOwnAnswers(t *testing.T) {
	t.Parallel()
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = fmt.Fprintf(w, "%s|%s", r.Header.Get("X-Request-Id"), b)
	})
	c := httpengine.New(httpengine.Options{MaxIdleConnsPerHost: 4})
	defer c.CloseIdle()
	l := worker.NewLive(worker.Worker{URL: srv.URL}, worker.StatusReady)
	var wg sync.WaitGroup
	errs := make(chan error, 16*40)
	for g := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 40 {
				id := fmt.Sprintf("g%d-%d", g, i)
				body := fmt.Sprintf(`{"n":"%s"}`, id)
				resp, err := c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/generate",
					Body: []byte(body), Header: http.Header{"X-Request-Id": {id}}})
				if err != nil {
					errs <- err
					continue
				}
				b, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(b) != id+"|"+body {
					errs <- fmt.Errorf("leg %s: got %q (%v)", id, b, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.LessOrEqual(t, cc.opened.Load(), int32(16+4*2), "connections are reused, not one per leg")
}

// A stream closed right after its last event, with only the chunked terminator unread
// (uvicorn writes it in a write of its own right after the last event), keeps its
// connection for the next leg.
func TestStreamClosedAfterItsLastEventKeepsTheConnection(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	const event = "data: [DONE]\n\n"
	readIt, written := make(chan struct{}), make(chan struct{})
	var accepted atomic.Int32
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			go func() {
				defer conn.Close()
				br := bufio.NewReader(conn)
				for {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					_, _ = io.Copy(io.Discard, req.Body)
					_, _ = fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(event), event)
					if req.URL.Path == "/stream" {
						<-readIt
					}
					_, _ = io.WriteString(conn, "0\r\n\r\n")
					if req.URL.Path == "/stream" {
						written <- struct{}{}
					}
				}
			}()
		}
	}()
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	url := "http://" + ln.Addr().String()
	resp, err := send(t, c, context.Background(), url, "/stream", nil)
	require.NoError(t, err)
	got := make([]byte, len(event))
	_, err = io.ReadFull(resp.Body, got)
	require.NoError(t, err)
	assert.Equal(t, event, string(got))
	readIt <- struct{}{}
	<-written // on loopback the terminator is in the socket buffer once the write returned
	require.NoError(t, resp.Body.Close())
	legToEnd(t, c, url, "/again")
	assert.EqualValues(t, 1, accepted.Load(), "the second leg reuses the connection")
}

// A body closed while the engine is still streaming much more is not drained: the
// connection is closed and the engine sees the abort.
func TestBodyClosedMidStreamIsNotDrained(t *testing.T) {
	t.Parallel()
	aborted := make(chan struct{})
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		event := []byte("data: " + strings.Repeat("x", 1000) + "\n\n")
		for i := 0; i < 100000; i++ {
			if _, err := w.Write(event); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				break
			}
		}
		<-r.Context().Done()
		close(aborted)
	})
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	resp, err := send(t, c, context.Background(), srv.URL, "/stream", nil)
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 100))
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	engineSawAbort(t, aborted)
}

// Close from another goroutine ends a Read blocked on a silent engine.
func TestCloseEndsABlockedRead(t *testing.T) {
	t.Parallel()
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	c := httpengine.New(httpengine.Options{})
	resp, err := send(t, c, context.Background(), srv.URL, "/stream", nil)
	require.NoError(t, err)
	_, err = io.ReadFull(resp.Body, make([]byte, 9))
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := resp.Body.Read(make([]byte, 64))
		done <- err
	}()
	time.Sleep(50 * time.Millisecond) // let the Read block
	require.NoError(t, resp.Body.Close())
	select {
	case err := <-done:
		assert.Error(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end the blocked Read")
	}
}

// Past its end a body keeps answering io.EOF, as net/http's do; after Close it says so.
func TestReadPastTheEndIsEOF(t *testing.T) {
	t.Parallel()
	srv, _ := countedServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`ok`)) })
	c := httpengine.New(httpengine.Options{})
	defer c.CloseIdle()
	resp, err := send(t, c, context.Background(), srv.URL, "/generate", nil)
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	assert.Equal(t, "ok", string(b))
	n, err := resp.Body.Read(make([]byte, 8))
	assert.Equal(t, 0, n)
	assert.Equal(t, io.EOF, err)
	require.NoError(t, resp.Body.Close())
}

// The pool of a worker URL that gets no legs for an idle timeout is dropped (worker URLs
// come and go with pods); a later leg to it builds a new one.
func TestUnusedPoolsAreDropped(t *testing.T) {
	t.Parallel()
	srv, cc := countedServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`ok`)) })
	c := httpengine.New(httpengine.Options{IdleConnTimeout: 100 * time.Millisecond})
	defer c.CloseIdle()
	leg := func() {
		legToEnd(t, c, srv.URL, "/generate")
	}
	leg()
	assert.Equal(t, 1, httpengine.Pools(c))
	waitFor(t, "the unused pool is dropped", func() bool { return httpengine.Pools(c) == 0 })
	waitFor(t, "its idle connection is closed", func() bool { return cc.closed.Load() == 1 })
	leg()
	assert.Equal(t, 1, httpengine.Pools(c))
	assert.EqualValues(t, 2, cc.opened.Load())
}
