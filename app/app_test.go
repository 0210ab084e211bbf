package app_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/app"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/ports"
)

// testConfig is the default config on loopback free ports, /metrics on the main port, no
// shutdown drain delay.
func testConfig() config.Config {
	cfg := config.Default()
	cfg.ShutdownDrainDelay = 0
	cfg.Host = "127.0.0.1"
	cfg.Port = 0
	cfg.PrometheusPort = 0
	cfg.LogLevel = "error"
	return cfg
}

// route adds a ports.Route to the fx group "routes".
func route(pattern string, h http.HandlerFunc) fx.Option {
	return fx.Provide(fx.Annotate(func() ports.Route { return ports.Route{Pattern: pattern, Handler: h} },
		fx.ResultTags(`group:"routes"`)))
}

func getBody(t *testing.T, url string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestGraphStartsAndStopsWithDefaults(t *testing.T) {
	t.Parallel()
	var srv *app.Server
	fa := fxtest.New(t, app.Options(testConfig(), fx.Populate(&srv)))
	fa.RequireStart()
	require.NotNil(t, srv.Addr())

	resp, body := getBody(t, srv.URL()+"/metrics")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, body, `smg_pd_kv_connector_mode_total{mode="nixl"} 0`)
	assert.Regexp(t, `^req-[A-Za-z0-9]{24}$`, resp.Header.Get("X-Request-Id"))

	fa.RequireStop()
	_, err := http.Get(srv.URL() + "/metrics")
	assert.Error(t, err, "the listener is closed after Stop")
}

func TestBadConfigFailsStart(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.PairingMode = "sometimes"
	fa := fx.New(app.Options(cfg))
	err := fa.Start(context.Background())
	require.Error(t, err)
	assert.Equal(t, `invalid value for --pd-pairing-mode: unknown mode "sometimes" (expected off, lenient or strict)`, err.Error())
	var fe *config.FlagError
	assert.True(t, errors.As(err, &fe))
}

func TestTakenPortFailsStart(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	cfg := testConfig()
	cfg.Port = ln.Addr().(*net.TCPAddr).Port
	fa := fx.New(app.Options(cfg))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = fa.Start(ctx)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "server: listen on 127.0.0.1:"+strconv.Itoa(cfg.Port)+" (--host/--port)")
}

func TestRoutesGroupIsMounted(t *testing.T) {
	t.Parallel()
	var srv *app.Server
	fa := fxtest.New(t, app.Options(testConfig(), fx.Populate(&srv),
		route("GET /v1/ping", func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "pong") })))
	fa.RequireStart()
	defer fa.RequireStop()
	resp, body := getBody(t, srv.URL()+"/v1/ping")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "pong", body)
}

func TestClashingRouteFailsTheGraph(t *testing.T) {
	t.Parallel()
	ok := func(w http.ResponseWriter, r *http.Request) {}
	fa := fx.New(app.Options(testConfig(), route("GET /metrics", ok)))
	require.Error(t, fa.Err())
	assert.Contains(t, fa.Err().Error(), `cannot mount route "GET /metrics"`)
}

func TestStopLetsInFlightRequestsFinish(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	var srv *app.Server
	fa := fx.New(app.Options(testConfig(), fx.Populate(&srv),
		route("GET /slow", func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			<-release
			_, _ = io.WriteString(w, "done")
		})))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fa.Start(ctx))

	type result struct {
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		resp, err := http.Get(srv.URL() + "/slow")
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{string(b), err}
	}()
	<-entered
	stopped := make(chan error, 1)
	go func() { stopped <- fa.Stop(ctx) }()

	// Once Stop has closed the listener, new connections are refused while /slow is in flight.
	require.Eventually(t, func() bool {
		c, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			return true
		}
		c.Close()
		return false
	}, 5*time.Second, 10*time.Millisecond)
	select {
	case err := <-stopped:
		t.Fatalf("Stop returned (%v) before the in-flight request finished", err)
	default:
	}
	close(release)
	r := <-got
	require.NoError(t, r.err)
	assert.Equal(t, "done", r.body)
	assert.NoError(t, <-stopped)
}

func TestStopClosesRequestsThatOutlastTheGracePeriod(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.ShutdownGracePeriod = 50 * time.Millisecond
	entered := make(chan struct{})
	var srv *app.Server
	cause := make(chan error, 1)
	fa := fx.New(app.Options(cfg, fx.Populate(&srv),
		route("GET /stuck", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			close(entered)
			<-r.Context().Done() // only ends when the grace period is over
			cause <- context.Cause(r.Context())
		})))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, fa.Start(ctx))
	resp, err := http.Get(srv.URL() + "/stuck")
	require.NoError(t, err)
	defer resp.Body.Close()
	<-entered
	err = fa.Stop(ctx)
	var cut *app.ShutdownCutError
	require.ErrorAs(t, err, &cut, "Stop says requests were cut")
	assert.Equal(t, int64(1), cut.Requests)
	assert.ErrorIs(t, <-cause, dispatch.ErrShutdown, "the request's context carries the shutdown cause")
	_, err = io.ReadAll(resp.Body)
	assert.NoError(t, err, "the handler saw the cut and ended its response before the connection closed")
}

func TestAdminAndHealthAPIAreServed(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.PDDisaggregation = true
	var srv *app.Server
	fa := fxtest.New(t, app.Options(cfg, fx.Populate(&srv)))
	fa.RequireStart()
	defer fa.RequireStop()

	cases := []struct {
		path   string
		status int
		body   string // substring
	}{
		{"/health", http.StatusOK, "OK"},
		{"/liveness", http.StatusOK, "OK"},
		{"/readiness", http.StatusServiceUnavailable, `"status":"not ready"`},
		{"/workers", http.StatusOK, `"workers":[]`},
		{"/openapi.yaml", http.StatusOK, "openapi: 3.1.0"},
		{"/metrics", http.StatusOK, "smg_pd_admission_sheds_total 0"},
	}
	for _, tc := range cases {
		resp, body := getBody(t, srv.URL()+tc.path)
		assert.Equal(t, tc.status, resp.StatusCode, tc.path)
		assert.Contains(t, body, tc.body, tc.path)
		assert.NotEmpty(t, resp.Header.Get("X-Request-Id"), tc.path)
	}
}
