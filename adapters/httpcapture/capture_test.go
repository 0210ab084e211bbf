package httpcapture_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/httpcapture"
)

func TestStatusAndBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		do         func(w http.ResponseWriter)
		status     int
		bytes      int64
		headerSent bool
	}{
		{"nothing written is 200 without a header", func(http.ResponseWriter) {}, 200, 0, false},
		{"a first Write is 200", func(w http.ResponseWriter) { _, _ = w.Write([]byte("abc")) }, 200, 3, true},
		{"the first non-1xx WriteHeader wins", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusCreated)
			w.WriteHeader(http.StatusInternalServerError)
		}, 201, 0, true},
		{"a 1xx alone is not the status", func(w http.ResponseWriter) { w.WriteHeader(http.StatusEarlyHints) }, 200, 0, false},
		{"WriteHeader after Write does not change it", func(w http.ResponseWriter) {
			_, _ = w.Write([]byte("x"))
			w.WriteHeader(http.StatusBadGateway)
		}, 200, 1, true},
		{"a Flush first commits 200", func(w http.ResponseWriter) {
			w.(http.Flusher).Flush()
			w.WriteHeader(http.StatusBadGateway)
		}, 200, 0, true},
		{"Write and WriteString both count", func(w http.ResponseWriter) {
			w.WriteHeader(http.StatusTeapot)
			_, _ = w.Write([]byte("data: {}\n\n"))
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
		}, 418, 24, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			cw := httpcapture.New(rec)
			start := time.Now()
			c.do(cw)
			res := cw.Result(start)
			assert.Equal(t, c.status, res.Status)
			assert.Equal(t, c.bytes, res.Bytes)
			assert.Equal(t, c.headerSent, cw.HeaderWritten())
			assert.GreaterOrEqual(t, res.Duration, time.Duration(0))
			assert.Equal(t, rec.Body.Len(), int(res.Bytes), "bytes are what reached the writer")
		})
	}
}

// The header map is the wrapped writer's, so the handlers' headers reach the client and
// the result's Header shows them.
func TestHeaderIsTheWrappedOne(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	cw := httpcapture.New(rec)
	cw.Header().Set("X-SMG-Error-Code", "no_workers")
	cw.WriteHeader(http.StatusServiceUnavailable)
	assert.Equal(t, "no_workers", rec.Header().Get("X-SMG-Error-Code"))
	assert.Equal(t, "no_workers", cw.Result(time.Now()).Header.Get("X-SMG-Error-Code"))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Same(t, http.ResponseWriter(rec), cw.Unwrap())
}

// Flush reaches the wrapped writer; FlushError reports a writer that cannot flush.
func TestFlush(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	cw := httpcapture.New(rec)
	_, _ = cw.Write([]byte("data: 1\n\n"))
	require.NoError(t, http.NewResponseController(cw).Flush())
	assert.True(t, rec.Flushed)

	noFlush := httpcapture.New(struct{ http.ResponseWriter }{httptest.NewRecorder()})
	assert.True(t, errors.Is(noFlush.FlushError(), http.ErrNotSupported))
}

// Through the wrapper, http.ResponseController still reaches the connection: read and
// write deadlines and full duplex work on a real server (they would be ErrNotSupported
// without Unwrap).
func TestResponseControllerReachesTheConnection(t *testing.T) {
	t.Parallel()
	errs := make(chan []error, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		cw := httpcapture.New(w)
		rc := http.NewResponseController(cw)
		errs <- []error{
			rc.SetReadDeadline(time.Now().Add(time.Minute)),
			rc.SetWriteDeadline(time.Now().Add(time.Minute)),
			rc.EnableFullDuplex(),
			rc.Flush(),
		}
	}))
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	for i, err := range <-errs {
		assert.NoError(t, err, "call %d", i)
	}
}
