package dispatch

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReadAllSizedReturnsExactlyTheBody(t *testing.T) {
	t.Parallel()
	body := strings.Repeat("0123456789", 500)
	cases := []struct {
		name string
		hint int64
	}{
		{"no hint", -1},
		{"exact hint", int64(len(body))},
		{"hint too small", 7},
		{"hint too large", int64(len(body)) * 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// OneByteReader: every read returns one byte, exercising the growth path.
			got, err := readAllSized(iotest.OneByteReader(strings.NewReader(body)), tc.hint)
			require.NoError(t, err)
			assert.Equal(t, body, string(got))
		})
	}
}

func TestReadAllSizedKeepsTheReadError(t *testing.T) {
	t.Parallel()
	boom := errors.New("boom")
	got, err := readAllSized(iotest.TimeoutReader(strings.NewReader("abc")), 10)
	assert.ErrorIs(t, err, iotest.ErrTimeout)
	assert.Equal(t, "abc", string(got))
	_, err = readAllSized(iotest.ErrReader(boom), 10)
	assert.ErrorIs(t, err, boom)
	// The body limit still applies when the client announced less than it sends.
	w := httptest.NewRecorder()
	_, err = readAllSized(http.MaxBytesReader(w, io.NopCloser(iotest.OneByteReader(strings.NewReader("abcdef"))), 4), 2)
	var mbe *http.MaxBytesError
	assert.ErrorAs(t, err, &mbe)
}

func TestReadPooledStopsAtTheLimitAndRecycles(t *testing.T) {
	t.Parallel()
	b, err := readPooled(strings.NewReader("abcdef"), 4, 6)
	require.NoError(t, err)
	assert.Equal(t, "abcd", b.String(), "like io.LimitReader")
	putBody(b)
	b, err = readPooled(strings.NewReader(`{"a":1}`), 1<<20, -1)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, b.String(), "a recycled buffer starts empty")
	putBody(b)
}

func TestContentLength(t *testing.T) {
	t.Parallel()
	assert.EqualValues(t, 42, contentLength(http.Header{"Content-Length": {"42"}}))
	assert.EqualValues(t, -1, contentLength(http.Header{}))
	assert.EqualValues(t, -1, contentLength(http.Header{"Content-Length": {"x"}}))
}

func TestReadAllSizedDoesNotTrustTheAnnouncedSize(t *testing.T) {
	t.Parallel()
	// A client announcing 1 TB and sending 8 bytes gets a buffer sized by what it sent.
	got, err := readAllSized(strings.NewReader("12345678"), 1_000_000_000_000)
	require.NoError(t, err)
	assert.Equal(t, "12345678", string(got))
	assert.LessOrEqual(t, cap(got), maxBodyReserve, "no reservation beyond maxBodyReserve before bytes arrive")

	// A large honest body grows with what arrives and ends no bigger than announced+1.
	body := strings.Repeat("x", 3*maxBodyReserve+17)
	got, err = readAllSized(iotest.HalfReader(strings.NewReader(body)), int64(len(body)))
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
	assert.Equal(t, len(body)+1, cap(got), "growth stops at the announced size")

	// A body longer than announced keeps growing (the size limit is MaxBytesReader's job).
	got, err = readAllSized(strings.NewReader(body), 100)
	require.NoError(t, err)
	assert.Equal(t, body, string(got))
}

func TestReadPooledReservesAtMostMaxPooledBody(t *testing.T) {
	t.Parallel()
	b, err := readPooled(strings.NewReader("tiny"), 1<<40, 1<<39)
	require.NoError(t, err)
	assert.Equal(t, "tiny", b.String())
	assert.LessOrEqual(t, b.Cap(), maxPooledBody+16<<10, "an engine's Content-Length is not a reservation")
	putBody(b)
}
