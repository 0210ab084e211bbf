package dispatch

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
)

// postBody is a data-plane POST with body; chunked leaves its length unknown (-1).
func postBody(ctx context.Context, body string, chunked bool) *http.Request {
	r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", strings.NewReader(body))
	if chunked {
		r.ContentLength = -1
	}
	return r
}

func inUse(bb *bodyBudget) int64 {
	_, n := bb.b.InUse()
	return n
}

func TestBodyBudgetShedsABodyThatFindsItFull(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(1, 50*time.Millisecond) // 1 MiB
	first := bb.hold(context.Background())
	big := strings.Repeat("a", 700<<10)
	b, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), big, false), 8<<20, 0, first)
	require.NoError(t, err)
	assert.Len(t, b, len(big))
	assert.Equal(t, int64(len(big)+1), inUse(bb), "the reservation follows the buffer, which ends at the Content-Length (+1 for EOF)")
	assert.Equal(t, len(big)+1, cap(b))

	w := httptest.NewRecorder()
	second := bb.hold(context.Background())
	start := time.Now()
	_, err = readClientBody(w, postBody(context.Background(), big, false), 8<<20, 0, second)
	assert.Less(t, time.Since(start), 2*time.Second, "waits only the budget's wait")
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, "worker_overload_protection_shed", e.Code)
	assert.Contains(t, e.Message, "--max-inflight-body-mb 1")
	assert.Equal(t, "close", w.Header().Get("Connection"), "the unread body is not drained")
	WriteError(w, err)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	var out struct {
		Error struct{ Code string } `json:"error"`
	}
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &out))
	assert.Equal(t, "worker_overload_protection_shed", out.Error.Code)
	second.release()
	assert.Equal(t, int64(len(big)+1), inUse(bb), "a shed request held nothing")

	first.release()
	first.release() // idempotent
	assert.Zero(t, inUse(bb))
	third := bb.hold(context.Background())
	b, err = readClientBody(httptest.NewRecorder(), postBody(context.Background(), big, false), 8<<20, 0, third)
	require.NoError(t, err, "the budget was given back")
	assert.Len(t, b, len(big))
	third.release()
}

func TestBodyBudgetWaitsForRoomThenReads(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(1, 5*time.Second)
	first := bb.hold(context.Background())
	body := strings.Repeat("a", 700<<10)
	_, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), body, false), 8<<20, 0, first)
	require.NoError(t, err)
	time.AfterFunc(50*time.Millisecond, first.release)
	second := bb.hold(context.Background())
	b, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), body, false), 8<<20, 0, second)
	require.NoError(t, err, "granted once the first body was given back")
	assert.Len(t, b, len(body))
	second.release()
	assert.Zero(t, inUse(bb))
}

func TestBodyBudgetGrowsWithAChunkedBody(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(1, 50*time.Millisecond)
	h := bb.hold(context.Background())
	body := strings.Repeat("b", 300<<10)
	b, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), body, true), 8<<20, 0, h)
	require.NoError(t, err)
	assert.Equal(t, body, string(b))
	assert.Equal(t, int64(cap(b)), inUse(bb), "the reservation follows the buffer")

	// A second chunked body grows until the budget is full and is shed mid-read.
	w := httptest.NewRecorder()
	h2 := bb.hold(context.Background())
	_, err = readClientBody(w, postBody(context.Background(), strings.Repeat("c", 900<<10), true), 8<<20, 0, h2)
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, bodyShedRetryAfterSecs, e.RetryAfterSecs)
	assert.Equal(t, "close", w.Header().Get("Connection"))
	h2.release()
	h.release()
	assert.Zero(t, inUse(bb), "a shed body's partial reservation is given back")
}

func TestBodyBudgetReadsABodyLargerThanItselfAlone(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(1, 50*time.Millisecond)
	body := strings.Repeat("d", 3<<20) // within --max-payload-size, above the budget
	for _, chunked := range []bool{false, true} {
		h := bb.hold(context.Background())
		b, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), body, chunked), 8<<20, 0, h)
		require.NoError(t, err, "chunked=%v: holds the whole budget instead of being refused", chunked)
		assert.Len(t, b, len(body))
		assert.Equal(t, int64(1<<20), inUse(bb))
		h.release()
	}
}

func TestBodyBudgetWaitEndsWithTheClient(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(1, 5*time.Second)
	first := bb.hold(context.Background())
	require.NoError(t, first.reserve(1<<20))
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	_, err := readClientBody(httptest.NewRecorder(), postBody(ctx, "{}", false), 8<<20, 0, bb.hold(ctx))
	assert.Less(t, time.Since(start), 2*time.Second)
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, 499, e.Status)
	first.release()
}

func TestNoBodyBudgetReadsAsBefore(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(0, time.Second)
	assert.Nil(t, bb, "0 MiB: unbounded")
	h := bb.hold(context.Background())
	b, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), `{"a":1}`, false), 8<<20, 0, h)
	require.NoError(t, err)
	assert.Equal(t, `{"a":1}`, string(b))
	h.release()
}

func TestBodyBudgetCountsWhatArrivedNotWhatWasAnnounced(t *testing.T) {
	t.Parallel()
	bb := newBodyBudget(1, 50*time.Millisecond)
	r := postBody(context.Background(), `{"model":"m"}`, false)
	r.ContentLength = 500 << 20 // announced, never sent (within --max-payload-size)
	h := bb.hold(context.Background())
	b, err := readClientBody(httptest.NewRecorder(), r, 512<<20, 0, h)
	require.NoError(t, err)
	assert.Equal(t, `{"model":"m"}`, string(b))
	assert.Equal(t, int64(maxBodyReserve), inUse(bb), "one first buffer, not the announced 500 MiB")
	assert.Equal(t, maxBodyReserve, cap(b))
	h.release()
}

// A body's reservation is given back as its response head is committed (an open stream
// holds no budget), once: the deferred release at the request's end gives nothing back
// twice.
func TestBodyBudgetIsGivenBackAtTheResponseHead(t *testing.T) {
	t.Parallel()
	for name, commit := range map[string]func(w http.ResponseWriter){
		"WriteHeader": func(w http.ResponseWriter) { w.WriteHeader(http.StatusOK) },
		"Write":       func(w http.ResponseWriter) { _, _ = w.Write([]byte("data: {}\n\n")) },
		"Flush":       func(w http.ResponseWriter) { require.NoError(t, http.NewResponseController(w).Flush()) },
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			bb := newBodyBudget(1, 50*time.Millisecond)
			h := bb.hold(context.Background())
			body := strings.Repeat("a", 100<<10)
			_, err := readClientBody(httptest.NewRecorder(), postBody(context.Background(), body, false), 8<<20, 0, h)
			require.NoError(t, err)
			rec := httptest.NewRecorder()
			w := releaseOnCommit(rec, h.release)
			w.WriteHeader(http.StatusContinue)
			assert.Equal(t, int64(len(body)+1), inUse(bb), "an interim 1xx commits nothing")
			commit(w)
			assert.Zero(t, inUse(bb), "given back at the head")
			h.release()
			assert.Zero(t, inUse(bb), "the deferred release gives nothing back twice")
		})
	}
}
