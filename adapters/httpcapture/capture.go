// Package httpcapture is the one response capture of the gateway's request middleware: a
// small http.ResponseWriter wrapper that records the status line and the body bytes for the
// access log and the RED metrics, keeping Flush and everything http.ResponseController
// reaches through Unwrap (read and write deadlines, full duplex, hijacking).
package httpcapture

import (
	"io"
	"net/http"
	"time"
)

// Writer wraps a response writer for one request and records what the handlers wrote. It
// is not safe for concurrent use, like the http.ResponseWriter it wraps.
type Writer struct {
	w      http.ResponseWriter
	status int
	bytes  int64
}

// New wraps w. Each request gets its own Writer.
func New(w http.ResponseWriter) *Writer { return &Writer{w: w} }

// Result is what a finished response looked like.
type Result struct {
	// Status is the first non-1xx status passed to WriteHeader, or 200 when the body was
	// written (or flushed) first or nothing was written at all (net/http then sends 200).
	Status int
	// Bytes counts the body bytes the wrapped writer accepted (Write, WriteString); the
	// status line and headers are not counted.
	Bytes int64
	// Duration is from the start given to Writer.Result to the call.
	Duration time.Duration
	// Header is the response's header map as the handlers left it (e.g. the gateway's
	// X-SMG-Error-Code).
	Header http.Header
}

// Header is the wrapped writer's header map.
func (c *Writer) Header() http.Header { return c.w.Header() }

// WriteHeader passes code on; the first non-1xx code is the recorded status.
func (c *Writer) WriteHeader(code int) {
	c.w.WriteHeader(code)
	if c.status == 0 && (code < 100 || code > 199) {
		c.status = code
	}
}

// Write passes p on and counts the bytes accepted; a first Write sends status 200.
func (c *Writer) Write(p []byte) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := c.w.Write(p)
	c.bytes += int64(n)
	return n, err
}

// WriteString is Write without the copy when the wrapped writer takes strings
// (net/http's does).
func (c *Writer) WriteString(s string) (int, error) {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	n, err := io.WriteString(c.w, s)
	c.bytes += int64(n)
	return n, err
}

// Flush sends what is buffered to the client (http.Flusher), for relayed streams. A flush
// before any status commits 200, as net/http does.
func (c *Writer) Flush() { _ = c.FlushError() }

// FlushError is Flush with the wrapped writer's error (http.ResponseController.Flush
// prefers it), e.g. when the client went away, or http.ErrNotSupported.
func (c *Writer) FlushError() error {
	if c.status == 0 {
		c.status = http.StatusOK
	}
	return http.NewResponseController(c.w).Flush()
}

// Unwrap is the wrapped writer, for http.ResponseController (SetReadDeadline,
// SetWriteDeadline, EnableFullDuplex, Hijack).
func (c *Writer) Unwrap() http.ResponseWriter { return c.w }

// HeaderWritten reports whether the status line was committed (WriteHeader with a non-1xx
// code, Write or Flush).
func (c *Writer) HeaderWritten() bool { return c.status != 0 }

// Result is the response so far, its Duration measured from start.
func (c *Writer) Result(start time.Time) Result {
	status := c.status
	if status == 0 {
		status = http.StatusOK
	}
	return Result{Status: status, Bytes: c.bytes, Duration: time.Since(start), Header: c.w.Header()}
}

var (
	_ http.Flusher                    = (*Writer)(nil)
	_ io.StringWriter                 = (*Writer)(nil)
	_ interface{ FlushError() error } = (*Writer)(nil)
)
