package httpengine_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/engine/httpengine"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func TestSendPostsBodyToBaseURLWithHeaders(t *testing.T) {
	t.Parallel()
	var gotPath, gotCT, gotRID, gotTrace string
	var gotBody []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotCT = r.URL.Path, r.Header.Get("Content-Type")
		gotRID, gotTrace = r.Header.Get("X-Request-Id"), r.Header.Get("Traceparent")
		gotBody, _ = io.ReadAll(r.Body)
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	defer srv.Close()

	c := httpengine.New(httpengine.Options{InjectHeaders: func(_ context.Context, h http.Header) {
		h.Set("Traceparent", "00-abc-def-01")
	}})
	// A DP-rank suffix is stripped from the URL the leg is posted to.
	l := worker.NewLive(worker.Worker{URL: srv.URL + "@3"}, worker.StatusReady)
	resp, err := c.Send(context.Background(), ports.LegRequest{
		Worker: l, Path: "/generate", Body: []byte(`{"text":"hi"}`),
		Header: http.Header{"X-Request-Id": {"rid-1"}},
	})
	require.NoError(t, err)
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	assert.Equal(t, 201, resp.Status)
	assert.JSONEq(t, `{"ok":true}`, string(body))
	assert.Equal(t, "/generate", gotPath)
	assert.Equal(t, "application/json", gotCT)
	assert.Equal(t, "rid-1", gotRID)
	assert.Equal(t, "00-abc-def-01", gotTrace)
	assert.Equal(t, `{"text":"hi"}`, string(gotBody))
}

func TestSendRefusedConnectionIsTransportError(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := httpengine.New(httpengine.Options{ConnectTimeout: time.Second})
	l := worker.NewLive(worker.Worker{URL: "http://" + addr}, worker.StatusReady)
	resp, err := c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/x", Body: []byte(`{}`)})
	assert.Error(t, err)
	assert.Nil(t, resp)
}

func TestCancelAbortsBodyAndEngineSeesDisconnect(t *testing.T) {
	t.Parallel()
	gone := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(200)
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		close(gone)
	}))
	defer srv.Close()
	c := httpengine.New(httpengine.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	l := worker.NewLive(worker.Worker{URL: srv.URL}, worker.StatusReady)
	resp, err := c.Send(ctx, ports.LegRequest{Worker: l, Path: "/s", Body: []byte(`{}`)})
	require.NoError(t, err)
	cancel()
	_, err = io.ReadAll(resp.Body)
	assert.Error(t, err)
	select {
	case <-gone:
	case <-time.After(5 * time.Second):
		t.Fatal("engine never saw the leg abort")
	}
}

func TestSendReturnsARedirectWithoutFollowingIt(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		http.Redirect(w, r, "/elsewhere", http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	c := httpengine.New(httpengine.Options{})
	l := worker.NewLive(worker.Worker{URL: srv.URL}, worker.StatusReady)
	resp, err := c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/generate", Body: []byte(`{}`)})
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusTemporaryRedirect, resp.Status)
	assert.Equal(t, "/elsewhere", resp.Header.Get("Location"))
	assert.EqualValues(t, 1, hits.Load(), "a PD leg is sent once")
}

func TestSendTransportErrorNamesTheURL(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c := httpengine.New(httpengine.Options{ConnectTimeout: time.Second})
	l := worker.NewLive(worker.Worker{URL: "http://" + addr}, worker.StatusReady)
	_, err = c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/generate", Body: []byte(`{}`)})
	var ue *url.Error
	require.ErrorAs(t, err, &ue)
	assert.Equal(t, "Post", ue.Op)
	assert.Equal(t, "http://"+addr+"/generate", ue.URL)
	assert.Contains(t, err.Error(), `Post "http://`+addr+`/generate": `)
}

// A worker registered with an api_key gets it as the Bearer token of every leg, in place of
// the client's Authorization; a worker without one sees the client's as forwarded.
func TestSendUsesTheWorkersAPIKey(t *testing.T) {
	t.Parallel()
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Header.Get("Authorization"))
		w.WriteHeader(200)
	}))
	defer srv.Close()
	c := httpengine.New(httpengine.Options{})
	for _, key := range []string{"worker-secret", ""} {
		l := worker.NewLive(worker.Worker{URL: srv.URL, APIKey: key}, worker.StatusReady)
		resp, err := c.Send(context.Background(), ports.LegRequest{Worker: l, Path: "/generate", Body: []byte(`{}`),
			Header: http.Header{"Authorization": {"Bearer client"}}})
		require.NoError(t, err)
		_ = resp.Body.Close()
	}
	assert.Equal(t, []string{"Bearer worker-secret", "Bearer client"}, got)
}
