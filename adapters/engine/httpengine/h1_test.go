package httpengine_test

import (
	"context"
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

// countingServer is an httptest server that counts the TCP connections it accepted.
type countingServer struct {
	*httptest.Server
	conns atomic.Int32
}

func newCountingServer(t *testing.T, h http.HandlerFunc) *countingServer {
	t.Helper()
	s := &countingServer{}
	s.Server = httptest.NewUnstartedServer(h)
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.Start()
	t.Cleanup(s.Close)
	return s
}

func live(url string) *worker.Live { return worker.NewLive(worker.Worker{URL: url}, worker.StatusReady) }

// leg sends one leg and reads its whole body.
func leg(t *testing.T, c *httpengine.Client, ctx context.Context, url, path, body string, h http.Header) (int, string) {
	t.Helper()
	resp, err := c.Send(ctx, ports.LegRequest{Worker: live(url), Path: path, Body: []byte(body), Header: h})
	require.NoError(t, err)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.NoError(t, resp.Body.Close())
	return resp.Status, string(b)
}

func TestFastPathKeepsOneConnectionForSequentialLegs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		h    http.HandlerFunc
		want string
	}{
		{"content-length answers", func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			_, _ = w.Write(b)
		}, `{"n":1}`},
		{"chunked streams", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			for i := range 3 {
				fmt.Fprintf(w, "data: %d\n\n", i)
				w.(http.Flusher).Flush()
			}
		}, "data: 0\n\ndata: 1\n\ndata: 2\n\n"},
		{"empty answers", func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusNoContent)
		}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newCountingServer(t, tc.h)
			c := httpengine.New(httpengine.Options{})
			defer c.CloseIdle()
			for range 20 {
				_, got := leg(t, c, context.Background(), srv.URL, "/generate", `{"n":1}`, nil)
				assert.Equal(t, tc.want, got)
			}
			assert.EqualValues(t, 1, srv.conns.Load(), "one keep-alive connection for 20 legs")
		})
	}
}

func TestFastPathWritesTheRequestLikeNetHTTP(t *testing.T) {
	t.Parallel()
	type seen struct {
		method, uri, host, ct, ua, rid string
		cl                             int64
		body                           string
	}
	got := make(chan seen, 1)
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- seen{r.Method, r.RequestURI, r.Host, r.Header.Get("Content-Type"), r.Header.Get("User-Agent"),
			r.Header.Get("X-Request-Id"), r.ContentLength, string(b)}
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(`{"error":"teapot"}`))
	})
	c := httpengine.New(httpengine.Options{})
	// A base URL with a path prefix and a DP-rank suffix.
	status, body := leg(t, c, context.Background(), srv.URL+"/engine@2", "/v1/completions", `{"prompt":"hi"}`,
		http.Header{"X-Request-Id": {"rid-7"}, "Content-Type": {"text/plain"}, "Host": {"evil"}})
	assert.Equal(t, http.StatusTeapot, status)
	assert.JSONEq(t, `{"error":"teapot"}`, body)
	s := <-got
	assert.Equal(t, seen{method: "POST", uri: "/engine/v1/completions", host: strings.TrimPrefix(srv.URL, "http://"),
		ct: "application/json", ua: "Go-http-client/1.1", rid: "rid-7", cl: 15, body: `{"prompt":"hi"}`}, s)
}

func TestFastPathRefusesHeadersThatWouldSplitTheHead(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {})
	c := httpengine.New(httpengine.Options{})
	for _, h := range []http.Header{
		{"X-Request-Id": {"a\r\nX-Evil: 1"}},
		{"Bad Name": {"v"}},
		{"X-Nul": {"a\x00b"}},
	} {
		_, err := c.Send(context.Background(), ports.LegRequest{Worker: live(srv.URL), Path: "/g", Body: []byte(`{}`), Header: h})
		require.Error(t, err, "%v", h)
		assert.Contains(t, err.Error(), "invalid header field")
	}
	assert.Zero(t, srv.conns.Load(), "nothing was sent")
}

func TestFastPathDoesNotReuseAClosedConnection(t *testing.T) {
	t.Parallel()
	t.Run("the engine answered Connection: close", func(t *testing.T) {
		t.Parallel()
		srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Connection", "close")
			_, _ = w.Write([]byte(`{}`))
		})
		c := httpengine.New(httpengine.Options{})
		for range 3 {
			leg(t, c, context.Background(), srv.URL, "/g", `{}`, nil)
		}
		assert.EqualValues(t, 3, srv.conns.Load())
	})
	t.Run("the engine closed the idle connection", func(t *testing.T) {
		t.Parallel()
		srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
		c := httpengine.New(httpengine.Options{})
		leg(t, c, context.Background(), srv.URL, "/g", `{}`, nil)
		srv.CloseClientConnections() // like an engine's keep-alive timeout
		require.Eventually(t, func() bool {
			status, _ := leg(t, c, context.Background(), srv.URL, "/g", `{}`, nil)
			return status == http.StatusOK
		}, 5*time.Second, 10*time.Millisecond)
		assert.EqualValues(t, 2, srv.conns.Load(), "a fresh connection, no failed leg")
	})
	t.Run("an idle connection past IdleConnTimeout", func(t *testing.T) {
		t.Parallel()
		srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
		c := httpengine.New(httpengine.Options{IdleConnTimeout: time.Millisecond})
		leg(t, c, context.Background(), srv.URL, "/g", `{}`, nil)
		time.Sleep(5 * time.Millisecond)
		leg(t, c, context.Background(), srv.URL, "/g", `{}`, nil)
		assert.EqualValues(t, 2, srv.conns.Load())
	})
}

func TestFastPathClosingTheBodyEarlyAbortsTheEngine(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte("data: 1\n\n"))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	})
	c := httpengine.New(httpengine.Options{})
	resp, err := c.Send(context.Background(), ports.LegRequest{Worker: live(srv.URL), Path: "/s", Body: []byte(`{}`)})
	require.NoError(t, err)
	buf := make([]byte, 64)
	n, err := resp.Body.Read(buf)
	require.NoError(t, err)
	assert.Equal(t, "data: 1\n\n", string(buf[:n]))
	require.NoError(t, resp.Body.Close())
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("engine never saw the leg abort")
	}
}

func TestFastPathCancelledBodyReadReportsTheContext(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := httpengine.New(httpengine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	resp, err := c.Send(ctx, ports.LegRequest{Worker: live(srv.URL), Path: "/s", Body: []byte(`{}`)})
	require.NoError(t, err)
	time.AfterFunc(20*time.Millisecond, cancel)
	_, err = io.ReadAll(resp.Body)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestFastPathFirstByteTimeout(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	c := httpengine.New(httpengine.Options{FirstByteTimeout: 50 * time.Millisecond})
	_, err := c.Send(context.Background(), ports.LegRequest{Worker: live(srv.URL), Path: "/g", Body: []byte(`{}`)})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timeout awaiting response headers")
}

func TestFastPathConcurrentLegs(t *testing.T) {
	t.Parallel()
	srv := newCountingServer(t, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Query().Get("stream") != "" || strings.Contains(string(b), "stream") {
			for i := range 3 {
				fmt.Fprintf(w, "data: %s-%d\n\n", b, i)
				w.(http.Flusher).Flush()
			}
			return
		}
		_, _ = w.Write(b)
	})
	c := httpengine.New(httpengine.Options{MaxIdleConnsPerHost: 4})
	defer c.CloseIdle()
	var wg sync.WaitGroup
	var bad atomic.Int32
	for g := range 16 {
		wg.Go(func() {
			for i := range 25 {
				body := fmt.Sprintf(`{"g":%d,"i":%d}`, g, i)
				want := body
				if i%2 == 1 {
					body = fmt.Sprintf(`{"g":%d,"i":%d,"stream":true}`, g, i)
					want = fmt.Sprintf("data: %s-0\n\ndata: %s-1\n\ndata: %s-2\n\n", body, body, body)
				}
				resp, err := c.Send(context.Background(), ports.LegRequest{Worker: live(srv.URL), Path: "/g", Body: []byte(body)})
				if err != nil {
					bad.Add(1)
					continue
				}
				got, err := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if err != nil || string(got) != want {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	assert.Zero(t, bad.Load(), "every leg got its own answer")
	assert.LessOrEqual(t, srv.conns.Load(), int32(16), "connections are reused")
}
