package load

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// HTTPHop is the ceiling of the gRPC benchmark: the direct client's work
// (DirectGRPCSGLang.generate) behind a bare net/http handler on loopback, reached by the
// same HTTP client as the gateway. Its handler decodes the completions body, runs both
// legs, and answers in the OpenAI completions shape: one JSON body, or for a streamed
// request one SSE event per decode message, flushed as it is written, then
// "data: [DONE]". It has no routing, admission, middleware or error handling, so for a
// JSON answer no gateway built on net/http costs less on the same machine: the throughput
// of HTTPHop over the direct client's is what an HTTP hop alone leaves. Streamed, it is a
// plain relay (a flush per decode message), not a bound.
type HTTPHop struct {
	srv  *http.Server
	done chan struct{}
	gw   *Gateway
	seq  atomic.Uint64
	d    *DirectGRPCSGLang
}

// NewHTTPHop serves d behind net/http on 127.0.0.1 (a free port) and sends wl to it with
// hc. Close stops the server.
func NewHTTPHop(d *DirectGRPCSGLang, wl Workload, hc *http.Client) (*HTTPHop, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	h := &HTTPHop{d: d, done: make(chan struct{})}
	h.srv = &http.Server{Handler: http.HandlerFunc(h.serve), ReadHeaderTimeout: 10 * time.Second}
	h.gw = NewGateway("http://"+ln.Addr().String(), wl, hc)
	go func() {
		defer close(h.done)
		_ = h.srv.Serve(ln)
	}()
	return h, nil
}

// URL is the hop's base URL, http://127.0.0.1:PORT.
func (h *HTTPHop) URL() string { return h.gw.URL }

// Name returns "hop".
func (h *HTTPHop) Name() string { return "hop" }

// Do sends one request through the hop, as Gateway.Do.
func (h *HTTPHop) Do(ctx context.Context, start time.Time, w *Worker) (Sample, error) {
	return h.gw.Do(ctx, start, w)
}

// Close stops the server and waits for it.
func (h *HTTPHop) Close() error {
	err := h.srv.Close()
	<-h.done
	return err
}

// hopRequest is the part of a completions body the hop reads.
type hopRequest struct {
	Model     string `json:"model"`
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
	Stream    bool   `json:"stream"`
}

// hopChoice and hopBody are the completions answer's shape (OpenAI text_completion).
type hopChoice struct {
	Index        int     `json:"index"`
	Text         string  `json:"text"`
	FinishReason *string `json:"finish_reason"`
}

type hopBody struct {
	ID      string      `json:"id"`
	Object  string      `json:"object"`
	Created int64       `json:"created"`
	Model   string      `json:"model"`
	Choices []hopChoice `json:"choices"`
}

func (h *HTTPHop) serve(w http.ResponseWriter, r *http.Request) {
	raw, err := io.ReadAll(r.Body)
	var req hopRequest
	if err == nil {
		err = json.Unmarshal(raw, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	id := "hop-" + strconv.FormatUint(h.seq.Add(1), 10)
	body := hopBody{ID: id, Object: "text_completion", Created: time.Now().Unix(), Model: req.Model, Choices: []hopChoice{{}}}
	if !req.Stream {
		var text []byte
		err := h.d.generate(r.Context(), id, req.Prompt, req.MaxTokens, false, func() {}, func(p string) { text = append(text, p...) }, func() {})
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		length := "length"
		body.Choices[0].Text, body.Choices[0].FinishReason = string(text), &length
		out, _ := json.Marshal(body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := http.NewResponseController(w)
	var text []byte
	pending := false
	event := func() {
		if !pending {
			return
		}
		body.Choices[0].Text = string(text)
		out, _ := json.Marshal(body)
		_, _ = w.Write(append(append([]byte("data: "), out...), '\n', '\n'))
		_ = fl.Flush()
		text, pending = text[:0], false
	}
	err = h.d.generate(r.Context(), id, req.Prompt, req.MaxTokens, true, func() {}, func(p string) {
		text, pending = append(text, p...), true
	}, event)
	event()
	if err != nil {
		msg, _ := json.Marshal(err.Error())
		_, _ = io.WriteString(w, "data: {\"error\":{\"message\":"+string(msg)+"}}\n\n")
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
}

var _ Target = (*HTTPHop)(nil)
