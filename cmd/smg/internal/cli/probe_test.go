package cli_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

// readinessServer answers /readiness with status and body, and counts the requests.
func readinessServer(t *testing.T, status int, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/readiness" {
			http.NotFound(w, r)
			return
		}
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func portOf(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	_, p, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	return p
}

func runCLI(args []string, env map[string]string) (int, string, string) {
	var out, errb bytes.Buffer
	code := cli.Run(context.Background(), args, envOf(env), &out, &errb)
	return code, out.String(), errb.String()
}

func TestProbeExitsZeroWhenReady(t *testing.T) {
	t.Parallel()
	srv, hits := readinessServer(t, 200, `{"status":"ready","healthy_workers":2,"total_workers":2}`)
	code, out, errOut := runCLI([]string{"probe", "--port", portOf(t, srv)}, nil)
	assert.Equal(t, 0, code, errOut)
	assert.Contains(t, out, "ready: 200")
	assert.Equal(t, int32(1), hits.Load())
}

func TestProbeExitsOneWhenDrainingAndNamesTheReason(t *testing.T) {
	t.Parallel()
	srv, hits := readinessServer(t, 503, `{"status":"not ready","reason":"draining"}`)
	code, out, errOut := runCLI([]string{"probe", "--url", srv.URL + "/readiness"}, nil)
	assert.Equal(t, 1, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "status 503")
	assert.Contains(t, errOut, "draining")
	assert.Equal(t, int32(1), hits.Load())
}

func TestProbeExitsOneWhenNothingListens(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	code, _, errOut := runCLI([]string{"probe", "--port", strconv.Itoa(p)}, nil)
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "refused")
}

func TestProbeTakesThePortFromPORTThenSMGPORT(t *testing.T) {
	t.Parallel()
	ready, readyHits := readinessServer(t, 200, `{"status":"ready"}`)
	other, otherHits := readinessServer(t, 503, `{"status":"not ready","reason":"insufficient healthy workers"}`)

	// PORT (Cloud Run) wins over SMG_PORT, as for `smg launch`.
	code, _, errOut := runCLI([]string{"probe", "-q"}, map[string]string{"PORT": portOf(t, ready), "SMG_PORT": portOf(t, other)})
	assert.Equal(t, 0, code, errOut)
	assert.Equal(t, int32(1), readyHits.Load())
	assert.Equal(t, int32(0), otherHits.Load())

	code, _, errOut = runCLI([]string{"probe"}, map[string]string{"SMG_PORT": portOf(t, other)})
	assert.Equal(t, 1, code)
	assert.Contains(t, errOut, "insufficient healthy workers")
	assert.Equal(t, int32(1), otherHits.Load())

	// An explicit --port beats both variables.
	code, _, _ = runCLI([]string{"probe", "--port", portOf(t, ready)}, map[string]string{"PORT": portOf(t, other)})
	assert.Equal(t, 0, code)
	assert.Equal(t, int32(2), readyHits.Load())
}

func TestProbeRejectsBadInputWithExitTwo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"probe", "--url", "ftp://x"}, nil, "--url"},
		{[]string{"probe", "--port", "70000"}, nil, "between 1 and 65535"},
		{[]string{"probe"}, map[string]string{"PORT": "abc"}, "PORT"},
		{[]string{"probe", "--path", "readiness"}, nil, "--path"},
		{[]string{"probe", "--timeout", "0s"}, nil, "--timeout"},
	} {
		code, _, errOut := runCLI(tc.args, tc.env)
		assert.Equal(t, 2, code, tc.args)
		assert.Contains(t, errOut, tc.want, tc.args)
	}
}
