package dispatch_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// The benchmarks below run the real handler (inspection, pair selection with pairing,
// body patching, both legs, relay) against an in-memory engine, so they measure the
// gateway's own cost per request without the network: ns/op and allocs/op are the
// dispatcher's (plus the fake engine's few allocations and http.ReadRequest's).

const benchBody = `{"model":"sim-model","prompt":"the gateway must cost almost nothing compared with a client performing the same two leg handoff","max_tokens":16,"stream":%t}`

// benchEvent is one decode SSE event of about 170 bytes.
const benchEvent = `data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"sim-model","choices":[{"index":0,"text":" word","logprobs":null,"finish_reason":null}]}` + "\n\n"

const benchJSON = `{"id":"cmpl-1","object":"text_completion","created":1,"model":"sim-model","choices":[{"index":0,"text":" a b c d e f g h i j k l m n o p","logprobs":null,"finish_reason":"length"}],"usage":{"prompt_tokens":16,"completion_tokens":16,"total_tokens":32}}`

const nixlPrefillJSON = `{"id":"cmpl-p","object":"text_completion","created":1,"model":"sim-model","choices":[{"index":0,"text":" a","logprobs":null,"finish_reason":"length"}],"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"engine-0","remote_block_ids":[[1,2,3]],"remote_host":"127.0.0.1","remote_port":5600,"remote_request_id":"r-1","tp_size":1}}`

// chunkReader returns one chunk per Read, like an engine flushing each SSE event.
type chunkReader struct {
	chunks [][]byte
	i      int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if r.i == len(r.chunks) {
		return 0, io.EOF
	}
	n := copy(p, r.chunks[r.i])
	if n == len(r.chunks[r.i]) {
		r.i++
	} else {
		r.chunks[r.i] = r.chunks[r.i][n:]
	}
	return n, nil
}

func (r *chunkReader) Close() error { return nil }

// fakeEngine answers every leg at once from memory.
type fakeEngine struct {
	prefill []byte
	decode  [][]byte // chunks; one element for a JSON answer
	sse     bool
}

func (e *fakeEngine) Send(_ context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	ct := "application/json"
	chunks := [][]byte{e.prefill}
	if req.Worker.Role == worker.RoleDecode {
		chunks = append([][]byte(nil), e.decode...)
		if e.sse {
			ct = "text/event-stream"
		}
	}
	return &ports.LegResponse{Status: http.StatusOK, Header: http.Header{"Content-Type": {ct}},
		Body: &chunkReader{chunks: chunks}}, nil
}

// discardWriter is a flushable ResponseWriter that keeps nothing.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) WriteHeader(s int)           { w.status = s }
func (w *discardWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }
func (w *discardWriter) Flush()                      {}

// SetReadDeadline is what http.ResponseController calls; the server's writer has it too.
func (w *discardWriter) SetReadDeadline(time.Time) error { return nil }

func benchDispatcher(b *testing.B, runtime worker.Runtime, eng *fakeEngine) http.Handler {
	b.Helper()
	st := memory.NewWorkers()
	bp := 8998
	pw := worker.Worker{ID: "p0", URL: "http://127.0.0.1:30001", Role: worker.RolePrefill, Runtime: runtime, Mode: worker.ConnHTTP}
	dw := worker.Worker{ID: "d0", URL: "http://127.0.0.1:30002", Role: worker.RoleDecode, Runtime: runtime, Mode: worker.ConnHTTP}
	if runtime == worker.RuntimeSGLang {
		pw.BootstrapPort = &bp
	} else {
		pw.KVConnector, dw.KVConnector = "NixlConnector", "NixlConnector"
	}
	for _, w := range []worker.Worker{pw, dw} {
		if err := st.Add(worker.NewLive(w, worker.StatusReady)); err != nil {
			b.Fatal(err)
		}
	}
	pp, err := policy.New("round_robin", policy.LegPrefill, policy.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	dp, err := policy.New("round_robin", policy.LegDecode, policy.DefaultOptions())
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.Default()
	cfg.PDDisaggregation = true
	d := dispatch.New(dispatch.Deps{Config: cfg, Store: st, Engine: eng,
		Selector: selection.New(st, pairing.ModeLenient, pp, dp, nil)})
	for _, r := range d.Routes() {
		if r.Pattern == "POST /v1/completions" {
			return r.Handler
		}
	}
	b.Fatal("no /v1/completions route")
	return nil
}

// runDispatch serves one request per iteration. The request is parsed from its wire bytes
// with http.ReadRequest through one reused bufio.Reader, as the server does with its
// connection's pooled reader (httptest.NewRequest would add a fresh 4 KB reader per request
// that the server does not allocate), and gets a cancellable context of its own, as the
// server gives each request.
func runDispatch(b *testing.B, h http.Handler, body []byte, wantBytes int) {
	b.Helper()
	w := &discardWriter{h: http.Header{}}
	wireReq := fmt.Appendf(nil, "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:30000\r\n"+
		"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	src := bytes.NewReader(wireReq)
	br := bufio.NewReader(src)
	b.ReportAllocs()
	for b.Loop() {
		clear(w.h)
		w.n, w.status = 0, 0
		src.Reset(wireReq)
		br.Reset(src)
		r, err := http.ReadRequest(br)
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		h.ServeHTTP(w, r.WithContext(ctx))
		cancel()
		if w.status != http.StatusOK || w.n < wantBytes {
			b.Fatalf("status %d, %d bytes", w.status, w.n)
		}
	}
}

// BenchmarkDispatch is one whole PD request through the handler: SGLang (bootstrap room,
// parallel legs) and vLLM NIXL (one-token prefill, kv_transfer_params relayed),
// non-streaming and streaming 16 events.
func BenchmarkDispatch(b *testing.B) {
	events := make([][]byte, 0, 17)
	for range 16 {
		events = append(events, []byte(benchEvent))
	}
	events = append(events, []byte("data: [DONE]\n\n"))
	sseLen := 16*len(benchEvent) + len("data: [DONE]\n\n")
	for _, rt := range []worker.Runtime{worker.RuntimeSGLang, worker.RuntimeVLLM} {
		prefill := []byte(benchJSON)
		if rt == worker.RuntimeVLLM {
			prefill = []byte(nixlPrefillJSON)
		}
		b.Run(string(rt)+"/non-streaming", func(b *testing.B) {
			h := benchDispatcher(b, rt, &fakeEngine{prefill: prefill, decode: [][]byte{[]byte(benchJSON)}})
			runDispatch(b, h, fmt.Appendf(nil, benchBody, false), len(benchJSON))
		})
		b.Run(string(rt)+"/streaming", func(b *testing.B) {
			h := benchDispatcher(b, rt, &fakeEngine{prefill: prefill, decode: events, sse: true})
			runDispatch(b, h, fmt.Appendf(nil, benchBody, true), sseLen)
		})
	}
}

// BenchmarkSSERelay streams a long decode answer (events of ~170 bytes, one per engine
// read) through the SGLang handler; B/s is relayed SSE bytes per second.
func BenchmarkSSERelay(b *testing.B) {
	for _, n := range []int{64, 1024} {
		b.Run(fmt.Sprintf("events=%d", n), func(b *testing.B) {
			events := make([][]byte, 0, n+1)
			for range n {
				events = append(events, []byte(benchEvent))
			}
			events = append(events, []byte("data: [DONE]\n\n"))
			total := n*len(benchEvent) + len("data: [DONE]\n\n")
			h := benchDispatcher(b, worker.RuntimeSGLang, &fakeEngine{prefill: []byte(benchJSON), decode: events, sse: true})
			b.SetBytes(int64(total))
			runDispatch(b, h, fmt.Appendf(nil, benchBody, true), total)
		})
	}
}
