package tenantbudget

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"sync"

	"github.com/smg-go/smg/ports"
)

// Bounds on what a Tap keeps to read usage from: a non-streaming body (a larger one
// settles at the estimate) and one SSE line.
const (
	maxTapBody = 8 << 20
	maxTapLine = 1 << 20
)

// Tap is the response writer of an admitted request: it passes everything on unchanged and
// reads the token usage the response reports — OpenAI chat and completions
// usage.{prompt_tokens, completion_tokens}, SGLang /generate meta_info.{prompt_tokens,
// completion_tokens}, Anthropic messages usage.{input_tokens, output_tokens} (streams: in
// message_start's message and in message_delta) and Responses usage.{input_tokens,
// output_tokens} (streams: in response.completed's response). Streams are read event by
// event (the largest count seen wins: streamed counts are cumulative).
type Tap struct {
	http.ResponseWriter
	mu             sync.Mutex
	status         int
	stream         bool
	body, line     []byte
	overflow       bool
	prompt, output int64
	events         int64
}

// Tap wraps w to learn what the response used; serve the request through it and settle
// with its Used.
func (k *Ticket) Tap(w http.ResponseWriter) *Tap { return &Tap{ResponseWriter: w} }

// WriteHeader notes the status and whether the response is an event stream.
func (t *Tap) WriteHeader(code int) {
	t.mu.Lock()
	t.head(code)
	t.mu.Unlock()
	t.ResponseWriter.WriteHeader(code)
}

func (t *Tap) head(code int) {
	if t.status != 0 || (code >= 100 && code < 200) {
		return
	}
	t.status = code
	t.stream = strings.HasPrefix(t.ResponseWriter.Header().Get("Content-Type"), "text/event-stream")
}

// Write reads p for usage, then passes it on.
func (t *Tap) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.head(http.StatusOK)
	if t.stream {
		t.scanLines(p)
	} else if !t.overflow {
		if len(t.body)+len(p) > maxTapBody {
			t.overflow, t.body = true, nil
		} else {
			t.body = append(t.body, p...)
		}
	}
	t.mu.Unlock()
	return t.ResponseWriter.Write(p)
}

// Flush flushes the wrapped writer.
func (t *Tap) Flush() { _ = http.NewResponseController(t.ResponseWriter).Flush() }

// FlushError is Flush with the wrapped writer's error (http.ResponseController prefers it).
func (t *Tap) FlushError() error { return http.NewResponseController(t.ResponseWriter).Flush() }

// Unwrap is the wrapped writer, for http.ResponseController.
func (t *Tap) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// scanLines reads the complete "data:" lines of p (with what an earlier write left).
func (t *Tap) scanLines(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			if len(t.line)+len(p) <= maxTapLine {
				t.line = append(t.line, p...)
			}
			return
		}
		line := p[:i]
		if len(t.line) > 0 {
			line = append(t.line, line...)
			t.line = t.line[:0]
		}
		p = p[i+1:]
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r"), []byte("data:"))
		if !ok {
			continue
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
			continue
		}
		t.events++
		t.read(data)
	}
}

type usageObj struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
}

type usageDoc struct {
	Usage    *usageObj `json:"usage"`
	MetaInfo *usageObj `json:"meta_info"`
	Message  *struct {
		Usage *usageObj `json:"usage"`
	} `json:"message"`
	Response *struct {
		Usage *usageObj `json:"usage"`
	} `json:"response"`
}

// read takes the usage counts of one JSON value, keeping the largest seen.
func (t *Tap) read(v []byte) {
	if !bytes.Contains(v, []byte(`"usage"`)) && !bytes.Contains(v, []byte(`"meta_info"`)) {
		return
	}
	var d usageDoc
	if json.Unmarshal(v, &d) != nil {
		return
	}
	for _, u := range []*usageObj{d.Usage, d.MetaInfo, nested(d.Message), nested(d.Response)} {
		if u == nil {
			continue
		}
		t.prompt = max(t.prompt, u.PromptTokens, u.InputTokens)
		t.output = max(t.output, u.CompletionTokens, u.OutputTokens)
	}
}

func nested(w *struct {
	Usage *usageObj `json:"usage"`
}) *usageObj {
	if w == nil {
		return nil
	}
	return w.Usage
}

// Used is what the request used, for Ticket.Settle: the reported usage where the response
// carried it; else, for a stream, the estimated prompt and one output token per event sent
// (engines send about one token per event); for a successful body without usage, the
// estimate; for an error answer, or none at all (the client left first), nothing.
func (t *Tap) Used(est ports.TokenUse) ports.TokenUse {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.stream && !t.overflow && len(t.body) > 0 {
		t.read(t.body)
	}
	ok := t.status >= 200 && t.status < 300
	u := ports.TokenUse{Prompt: t.prompt, Output: t.output}
	if u.Prompt == 0 && ok {
		u.Prompt = est.Prompt
	}
	if u.Output == 0 && ok {
		if t.stream {
			u.Output = t.events
		} else if t.prompt == 0 {
			u.Output = est.Output
		}
	}
	return u
}
