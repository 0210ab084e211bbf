package dispatch

import (
	"bytes"
	"io"
	"net/http"
	"strconv"
	"sync"
)

// relayBufs recycles the streaming relay's read buffers (relayBufSize bytes each): a stream
// takes one for its lifetime and returns it at the end, so steady streaming allocates no
// buffer per request and an idle gateway holds none.
var relayBufs = sync.Pool{New: func() any {
	b := make([]byte, relayBufSize)
	return &b
}}

// getRelayBuf returns a relayBufSize buffer; give it back with putRelayBuf once no slice
// of it is referenced any more.
func getRelayBuf() *[]byte { return relayBufs.Get().(*[]byte) }

func putRelayBuf(b *[]byte) { relayBufs.Put(b) }

// maxPooledBody is the largest body buffer returned to bodyBufs (bytes); bigger ones are
// left to the garbage collector so one huge answer does not stay pinned.
const maxPooledBody = 1 << 20

// bodyBufs recycles the buffers engine answers are read into when the gateway needs the
// whole body before answering (a non-streaming decode answer, a vLLM prefill answer).
var bodyBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// readPooled reads r to its end into a pooled buffer, stopping after limit bytes (like
// io.LimitReader: the rest is left unread). hint, when in (0, limit], is the expected size
// (Content-Length) and sizes the buffer at once. The buffer's bytes are valid until
// putBody; the error is the read's (never io.EOF).
func readPooled(r io.Reader, limit, hint int64) (*bytes.Buffer, error) {
	b := bodyBufs.Get().(*bytes.Buffer)
	if hint > 0 && hint <= limit {
		b.Grow(int(hint) + bytes.MinRead)
	}
	_, err := b.ReadFrom(io.LimitReader(r, limit))
	return b, err
}

// putBody returns a buffer from readPooled once nothing references its bytes.
func putBody(b *bytes.Buffer) {
	if b.Cap() > maxPooledBody {
		return
	}
	b.Reset()
	bodyBufs.Put(b)
}

// contentLength is h's Content-Length, or -1 when absent or not a number.
func contentLength(h http.Header) int64 {
	v := h.Get("Content-Length")
	if v == "" {
		return -1
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return -1
	}
	return n
}

// readAllSized is io.ReadAll with the buffer sized for hint bytes (a Content-Length) up
// front: one allocation for a body of the announced size instead of io.ReadAll's doubling
// from 512 bytes. hint <= 0 falls back to io.ReadAll. The bytes are the caller's to keep
// (a client body outlives the request's legs, so it is not pooled).
func readAllSized(r io.Reader, hint int64) ([]byte, error) {
	if hint <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, hint+1) // +1: the read that sees EOF needs no growth
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				return b, nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // more than announced: grow like append
		}
	}
}
