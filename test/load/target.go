package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
)

// Workload is the request every phase sends: an OpenAI completions body
// {"model","prompt","max_tokens","stream"} on Path.
type Workload struct {
	// Path is the route, "/v1/completions" when empty.
	Path string
	// Model is the "model" field; "sim-model" when empty (the smg-sim default).
	Model string
	// Prompt is the prompt text; the simulator counts one token per whitespace-separated word.
	Prompt string
	// MaxTokens is the number of output tokens asked for (max_tokens).
	MaxTokens int
	// Stream asks for an SSE response.
	Stream bool
}

// path returns Path or the default.
func (w Workload) path() string {
	if w.Path == "" {
		return wire.PathCompletions
	}
	return w.Path
}

// Body renders the client request body.
func (w Workload) Body() []byte {
	m := w.Model
	if m == "" {
		m = "sim-model"
	}
	return fmt.Appendf(nil, `{"model":%s,"prompt":%s,"max_tokens":%d,"stream":%t}`,
		strconv.Quote(m), strconv.Quote(w.Prompt), w.MaxTokens, w.Stream)
}

// Target sends one request of a workload and reads its response completely.
type Target interface {
	// Name is the mode shown in reports ("gateway", "direct").
	Name() string
	// Do sends one request whose clock starts at start (the scheduled send time) and reads
	// the whole response, recording inter-chunk gaps in w. An error means the request
	// failed (transport, non-2xx, or an incomplete stream).
	Do(ctx context.Context, start time.Time, w *Worker) (Sample, error)
}

// Worker is the per-goroutine scratch space of a load phase: a read buffer and the
// goroutine's sample recorder. It is not safe for concurrent use.
type Worker struct {
	// Seq counts the requests this worker started (for request ids).
	Seq uint64
	// ID is the worker's index in its phase.
	ID  int
	buf []byte
	rec *recorder
}

func newWorker(id int) *Worker {
	return &Worker{ID: id, buf: make([]byte, 32<<10), rec: &recorder{}}
}

// NewClient returns an HTTP client for loopback load: keep-alive with up to maxConns idle
// connections per host, no compression, no proxy, no overall timeout (phases bound time).
func NewClient(maxConns int) *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConns:        0,
		MaxIdleConnsPerHost: max(maxConns, 2),
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		ForceAttemptHTTP2:   false,
	}}
}

// post sends body to url with the JSON content type and optional X-Request-Id.
func post(ctx context.Context, hc *http.Client, url string, body []byte, reqID string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if reqID != "" {
		req.Header.Set(wire.HeaderRequestID, reqID)
	}
	return hc.Do(req)
}

// errBodySnippet bounds the error body quoted in an error (bytes).
const errBodySnippet = 300

// statusError reads a little of a non-2xx body and closes it.
func statusError(leg string, resp *http.Response) error {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, errBodySnippet))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	_ = resp.Body.Close()
	return fmt.Errorf("%s: HTTP %d: %s", leg, resp.StatusCode, strings.TrimSpace(string(b)))
}

// errNoDone is a stream that ended without its [DONE] event.
var errNoDone = errors.New("stream ended without data: [DONE]")

// readResponse reads resp to EOF with w's buffer, timing the first byte (TTFT) and, for a
// stream, the gap between successive reads that carried data. A stream must contain the
// line-anchored [DONE] event. The body is closed.
func readResponse(resp *http.Response, start time.Time, w *Worker, stream bool) (Sample, error) {
	defer resp.Body.Close()
	var s Sample
	var scan handoff.DoneScanner
	done := false
	var last time.Time
	for {
		n, err := resp.Body.Read(w.buf)
		if n > 0 {
			now := time.Now()
			if s.Bytes == 0 {
				s.TTFT = now.Sub(start)
			} else if stream {
				w.rec.addGap(now.Sub(last))
			}
			last = now
			s.Bytes += n
			if stream && !done {
				_, done = scan.Feed(w.buf[:n])
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return s, fmt.Errorf("read body: %w", err)
		}
	}
	s.Latency = time.Since(start)
	if stream && !done {
		return s, errNoDone
	}
	if s.Bytes == 0 {
		return s, errors.New("empty response body")
	}
	return s, nil
}

// Gateway sends the workload to a gateway (smg) route.
type Gateway struct {
	// URL is the gateway's base URL, http://127.0.0.1:PORT.
	URL string
	// Workload is the request sent.
	Workload Workload
	// Client sends the requests (NewClient).
	Client *http.Client
	body   []byte
}

// NewGateway builds a Gateway target.
func NewGateway(url string, wl Workload, hc *http.Client) *Gateway {
	return &Gateway{URL: url, Workload: wl, Client: hc, body: wl.Body()}
}

// Name returns "gateway".
func (g *Gateway) Name() string { return "gateway" }

// Do sends one request through the gateway.
func (g *Gateway) Do(ctx context.Context, start time.Time, w *Worker) (Sample, error) {
	w.Seq++
	resp, err := post(ctx, g.Client, g.URL+g.Workload.path(), g.body, "")
	if err != nil {
		return Sample{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return Sample{}, statusError("gateway", resp)
	}
	return readResponse(resp, start, w, g.Workload.Stream)
}

var _ Target = (*Gateway)(nil)
