package mediafetch_test

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/mediafetch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
)

func requireInvalid(t *testing.T, err error, contains string) {
	t.Helper()
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	require.Equal(t, 400, e.Status)
	require.Equal(t, wire.CodeInvalidRequest, e.Code)
	require.Contains(t, e.Message, contains)
}

func TestDataURL(t *testing.T) {
	f := mediafetch.New(mediafetch.Options{MaxBytes: 16})
	raw := []byte{0x89, 'P', 'N', 'G', 0, 1, 2}
	b, err := f.Fetch(context.Background(), "data:image/png;base64,"+base64.StdEncoding.EncodeToString(raw))
	require.NoError(t, err)
	require.Equal(t, raw, b)
	b, err = f.Fetch(context.Background(), "data:image/png;base64,"+base64.RawStdEncoding.EncodeToString(raw))
	require.NoError(t, err)
	require.Equal(t, raw, b)
	b, err = f.Fetch(context.Background(), "data:text/plain,a%20b")
	require.NoError(t, err)
	require.Equal(t, "a b", string(b))

	_, err = f.Fetch(context.Background(), "data:image/png;base64,"+base64.StdEncoding.EncodeToString(make([]byte, 17)))
	requireInvalid(t, err, "larger than 16 bytes")
	_, err = f.Fetch(context.Background(), "data:image/png;base64,@@@")
	requireInvalid(t, err, "bad base64")
	_, err = f.Fetch(context.Background(), "data:image/png;base64")
	requireInvalid(t, err, "malformed data URL")
	_, err = f.Fetch(context.Background(), "file:///etc/passwd")
	requireInvalid(t, err, `scheme "file"`)
}

func TestHTTPURL(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.png":
			_, _ = w.Write([]byte("0123456789"))
		case "/big":
			_, _ = w.Write([]byte(strings.Repeat("x", 100)))
		case "/chunked-big":
			w.(http.Flusher).Flush() // no Content-Length
			for i := 0; i < 10; i++ {
				_, _ = w.Write([]byte("0123456789"))
			}
		case "/slow":
			select {
			case <-time.After(5 * time.Second):
			case <-r.Context().Done():
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	f := mediafetch.New(mediafetch.Options{MaxBytes: 32, Timeout: 300 * time.Millisecond})
	b, err := f.Fetch(context.Background(), srv.URL+"/ok.png")
	require.NoError(t, err)
	require.Equal(t, "0123456789", string(b))

	_, err = f.Fetch(context.Background(), srv.URL+"/big")
	requireInvalid(t, err, "larger than 32 bytes")
	_, err = f.Fetch(context.Background(), srv.URL+"/chunked-big")
	requireInvalid(t, err, "larger than 32 bytes")
	_, err = f.Fetch(context.Background(), srv.URL+"/missing?token=secret")
	requireInvalid(t, err, "status 404")
	require.NotContains(t, err.Error(), "secret")

	start := time.Now()
	_, err = f.Fetch(context.Background(), srv.URL+"/slow")
	requireInvalid(t, err, "fetching media")
	require.Less(t, time.Since(start), 3*time.Second, "the fetch timeout bounds a silent server")
}
