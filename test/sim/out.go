package sim

import (
	"context"
	"net/http"
	"time"
)

// out writes one inference response: a JSON body, an SSE stream, or an error in the
// engine's shape. It supports the delay-body fault (head now, body later): once the head
// is out, errors travel in the body.
type out struct {
	w        http.ResponseWriter
	rc       *http.ResponseController
	s        *Server
	ctx      context.Context
	stream   bool
	headSent bool
	delay    time.Duration // pending delay-body wait before the first body byte
	buf      []byte
}

// head sends a 200 head now (Content-Type by stream mode) and flushes it.
func (o *out) head() bool {
	if o.headSent {
		return true
	}
	o.headSent = true
	if o.stream {
		h := o.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
	} else {
		o.w.Header().Set("Content-Type", "application/json")
	}
	o.w.WriteHeader(http.StatusOK)
	return o.rc.Flush() == nil
}

// waitDelay performs the pending delay-body wait once.
func (o *out) waitDelay() bool {
	d := o.delay
	o.delay = 0
	return o.s.sleep(o.ctx, d)
}

// body writes a complete non-streaming 200 body.
func (o *out) body(b []byte) bool {
	if !o.headSent {
		writeJSONStatus(o.w, http.StatusOK, b)
		return true
	}
	if !o.waitDelay() {
		return false
	}
	_, err := o.w.Write(b)
	return err == nil && o.rc.Flush() == nil
}

// event writes one SSE event (named when name != "") and flushes it.
func (o *out) event(name string, data []byte) bool {
	if !o.head() || !o.waitDelay() {
		return false
	}
	b := o.buf[:0]
	if name != "" {
		b = append(b, "event: "...)
		b = append(b, name...)
		b = append(b, '\n')
	}
	b = append(b, "data: "...)
	b = append(b, data...)
	b = append(b, "\n\n"...)
	o.buf = b
	_, err := o.w.Write(b)
	return err == nil && o.rc.Flush() == nil
}

// done writes the terminating `data: [DONE]` event.
func (o *out) done() bool { return o.event("", []byte("[DONE]")) }

// fail answers with e in the engine's shape and counts it in errors. errClientGone is only
// counted (aborted).
func (o *out) fail(e *reqError) {
	if e == errClientGone {
		o.s.c.aborted.Add(1)
		return
	}
	o.s.c.errors.Add(1)
	if !o.headSent {
		writeJSONStatus(o.w, e.status, errorBody(o.s.cfg.Engine, e))
		return
	}
	if !o.waitDelay() {
		return
	}
	if o.stream {
		_, _ = o.w.Write(streamErrorEvent(o.s.cfg.Engine, e))
		_, _ = o.w.Write([]byte("data: [DONE]\n\n"))
	} else {
		_, _ = o.w.Write(errorBody(o.s.cfg.Engine, e))
	}
	_ = o.rc.Flush()
}
