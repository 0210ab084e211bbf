package dispatch

import (
	"bytes"
	"errors"
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
// (Content-Length); it sizes the buffer up front only up to maxPooledBody, so a peer that
// announces a huge body and sends little costs what it sent. The buffer's bytes are valid
// until putBody; the error is the read's (never io.EOF).
func readPooled(r io.Reader, limit, hint int64) (*bytes.Buffer, error) {
	b := bodyBufs.Get().(*bytes.Buffer)
	if hint > 0 && hint <= limit {
		b.Grow(int(min(hint, maxPooledBody)) + bytes.MinRead)
	}
	for int64(b.Len()) < limit { // io.LimitReader's bound, without allocating one per read
		if b.Available() < bytes.MinRead {
			b.Grow(bytes.MinRead)
		}
		room := b.AvailableBuffer()[:min(int64(b.Available()), limit-int64(b.Len()))]
		n, err := r.Read(room)
		if n < 0 || n > len(room) {
			return b, errNegativeRead
		}
		b.Write(room[:n]) // appends in place: room is b's own spare capacity
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
	return b, nil
}

// errNegativeRead reports a reader that returned an impossible count, as bytes.Buffer does.
var errNegativeRead = errors.New("dispatch: reader returned an invalid count")

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

// maxBodyReserve is the most readAllSized allocates before any byte arrived (bytes): a
// client's Content-Length is a claim, not a reservation.
const maxBodyReserve = 64 << 10

// readAllSized is io.ReadAll that uses hint (a Content-Length) without trusting it: the
// buffer starts at min(hint, maxBodyReserve) bytes and doubles as bytes arrive, never past
// hint+1 while the body stays within its announced size, so memory follows the bytes
// received (at most about twice them) and an honest body ends in a buffer of its size.
// hint <= 0 starts at 512 bytes. The bytes are the caller's to keep (a client body
// outlives the request's legs, so it is not pooled).
func readAllSized(r io.Reader, hint int64) ([]byte, error) {
	return readAllReserved(r, hint, nil)
}

// readStart is the first buffer size (bytes) of readAllSized for a Content-Length hint.
func readStart(hint int64) int64 {
	if hint > 0 {
		return min(hint+1, maxBodyReserve) // +1: the read that sees EOF needs no growth
	}
	return 512
}

// readAllReserved is readAllSized under a memory reservation: the caller has already
// reserved the first buffer (readStart(hint) bytes), and every growth past it first
// reserves the added bytes through grow (nil: no reservation), whose error ends the read.
// The reservation so follows the buffer, which follows the bytes received.
func readAllReserved(r io.Reader, hint int64, grow func(n int64) error) ([]byte, error) {
	start := readStart(hint)
	b := make([]byte, 0, start)
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
			next := int64(cap(b)) * 2
			if hint > 0 && int64(len(b)) <= hint {
				next = min(next, hint+1)
			}
			if grow != nil {
				if err := grow(next - int64(cap(b))); err != nil {
					return b, err
				}
			}
			nb := make([]byte, len(b), next)
			copy(nb, b)
			b = nb
		}
	}
}
