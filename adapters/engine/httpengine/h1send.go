package httpengine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/smg-go/smg/ports"
)

// errHeadTimeout is what a leg fails with when FirstByteTimeout passes before the response
// head, worded as net/http's transport words its ResponseHeaderTimeout.
var errHeadTimeout = errors.New("net/http: timeout awaiting response headers")

// errSwitchingProtocols is what a leg fails with when the engine answers 101: a leg never
// asks for an upgrade, and the connection is no longer HTTP/1.1.
var errSwitchingProtocols = errors.New("engine answered 101 Switching Protocols to a leg that asked for no upgrade")

// maxHeadBytes bounds the bytes read for one response head, interim 1xx heads included:
// net/http's transport default for MaxResponseHeaderBytes (10 MiB).
const maxHeadBytes = 10 << 20

// errHeadTooLarge is what a leg fails with when the response head exceeds maxHeadBytes,
// worded as net/http's transport words it.
var errHeadTooLarge = fmt.Errorf("net/http: server response headers exceeded %d bytes; aborted", maxHeadBytes)

// skipHeader lists forwarded header names the client writes itself or never sends: framing
// and hop-by-hop fields (RFC 9110 §7.6.1) would corrupt the exchange.
var skipHeader = map[string]bool{
	"Host": true, "Content-Length": true, "Content-Type": true, "Transfer-Encoding": true,
	"Connection": true, "Keep-Alive": true, "Proxy-Connection": true, "Te": true,
	"Trailer": true, "Upgrade": true, "Expect": true,
}

// sendH1 is Send over the pool of a plain-HTTP engine: the request is written and its
// response head read on the calling goroutine, with no reader and writer goroutines per
// connection as net/http's transport runs (a body over syncBodyMax is written on a
// goroutine of its own while the head is read). Cancelling ctx closes the connection, which
// unblocks a pending write or read at once and shows the engine the leg abort. A write that
// fails on a reused connection (the engine had closed it) is retried once on a new one:
// nothing reached the engine.
func (c *Client) sendH1(ctx context.Context, p *hostPool, base string, req ports.LegRequest) (*ports.LegResponse, error) {
	target := p.target(req.Path)
	var extra http.Header
	if c.inject != nil {
		extra = make(http.Header, 2)
		c.inject(ctx, extra)
	}
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, &url.Error{Op: "Post", URL: base + req.Path, Err: err}
		}
		pc, reused, err := c.get(ctx, p)
		if err != nil {
			return nil, &url.Error{Op: "Post", URL: base + req.Path, Err: err}
		}
		stop := context.AfterFunc(ctx, func() { _ = pc.nc.Close() })
		var wrote chan error // the write's result when it runs beside the head read
		if len(req.Body) > syncBodyMax {
			wrote = make(chan error, 1)
			go func() {
				err := writeRequest(pc, p.host, target, req, extra)
				var he headerError
				if errors.As(err, &he) {
					_ = pc.nc.Close() // the request is incomplete: nothing will answer it
				}
				wrote <- err
			}()
		} else if err := writeRequest(pc, p.host, target, req, extra); err != nil {
			stop()
			_ = pc.nc.Close()
			if retry, err := writeFailed(ctx, err, reused && attempt == 0); !retry {
				return nil, &url.Error{Op: "Post", URL: base + req.Path, Err: err}
			}
			continue
		}
		resp, err := c.readHead(pc)
		if err != nil {
			stop()
			_ = pc.nc.Close()
			if wrote != nil { // the write ends at the close; a failed one decides as above
				if werr := <-wrote; werr != nil {
					retry, werr := writeFailed(ctx, werr, reused && attempt == 0)
					if retry {
						continue
					}
					if errors.As(werr, new(headerError)) {
						return nil, &url.Error{Op: "Post", URL: base + req.Path, Err: werr}
					}
				}
			}
			return nil, &url.Error{Op: "Post", URL: base + req.Path, Err: cause(ctx, err)}
		}
		b := &h1Body{c: c, p: p, pc: pc, body: resp.Body, stop: stop, ctx: ctx, keep: !resp.Close, wrote: wrote}
		return &ports.LegResponse{Status: resp.StatusCode, Header: resp.Header, Body: b}, nil
	}
}

// syncBodyMax is the largest request body written on the caller's goroutine before the
// head is read: with the head it fits the kernel's default TCP send buffer (16 KiB), so
// the write completes even when the engine reads nothing. A larger body is written on a
// goroutine while the head is read, as net/http's transport does always: an engine may
// answer (a 401, a 413, an overload 503) without reading the body, and then that answer
// is the leg's, not a write blocked until the leg deadline or failed with a reset.
const syncBodyMax = 12 << 10

// writeDone bounds how long releasing a body waits for the request's write to finish
// before pooling its connection (net/http's transport waits 50 ms likewise).
const writeDone = 50 * time.Millisecond

// writeFailed classifies a failed write: an invalid header fails the leg as it is; another
// failure on a reused connection with ctx live is retried (mayRetry; the engine cannot
// have taken an incomplete request); else the leg fails with ctx's error or err.
func writeFailed(ctx context.Context, err error, mayRetry bool) (retry bool, _ error) {
	var he headerError
	if errors.As(err, &he) {
		return false, err
	}
	if mayRetry && ctx.Err() == nil {
		return true, nil
	}
	return false, cause(ctx, err)
}

// headerError is a header name or value that cannot be written (a CR or LF in an api key).
type headerError struct{ name string }

func (e headerError) Error() string {
	return fmt.Sprintf("net/http: invalid header field value for %q", e.name)
}

// writeRequest writes the leg as one HTTP/1.1 POST with a Content-Length and flushes it in
// one write: request line, Host, Content-Type and Content-Length, the forwarded headers
// (minus framing ones), the worker's api key as Bearer token in place of the client's
// Authorization, the injected trace headers, then the body.
func writeRequest(pc *h1Conn, host, target string, req ports.LegRequest, extra http.Header) error {
	w := pc.bw
	_, _ = w.WriteString("POST ")
	_, _ = w.WriteString(target)
	_, _ = w.WriteString(" HTTP/1.1\r\nHost: ")
	_, _ = w.WriteString(host)
	_, _ = w.WriteString("\r\nUser-Agent: smg\r\nContent-Type: application/json\r\nContent-Length: ")
	var num [20]byte
	_, _ = w.Write(strconv.AppendInt(num[:0], int64(len(req.Body)), 10))
	_, _ = w.WriteString("\r\n")
	key := req.Worker.APIKey
	for k, vs := range req.Header {
		if skipHeader[k] || (key != "" && k == "Authorization") || extra[k] != nil {
			continue
		}
		if err := writeHeader(w, k, vs); err != nil {
			return err
		}
	}
	if key != "" {
		if err := writeHeader(w, "Authorization", []string{"Bearer " + key}); err != nil {
			return err
		}
	}
	for k, vs := range extra {
		if err := writeHeader(w, k, vs); err != nil {
			return err
		}
	}
	_, _ = w.WriteString("\r\n")
	_, _ = w.Write(req.Body)
	return w.Flush()
}

// writeHeader writes one field line per value, refusing names and values net/http would
// refuse.
func writeHeader(w interface{ WriteString(string) (int, error) }, k string, vs []string) error {
	if !httpguts.ValidHeaderFieldName(k) {
		return headerError{name: k}
	}
	for _, v := range vs {
		if !httpguts.ValidHeaderFieldValue(v) {
			return headerError{name: k}
		}
		_, _ = w.WriteString(k)
		_, _ = w.WriteString(": ")
		_, _ = w.WriteString(v)
		_, _ = w.WriteString("\r\n")
	}
	return nil
}

// readHead reads the response head with net/http's own parser, skipping interim 1xx
// answers (not 101) as net/http's transport does, bounded by FirstByteTimeout when set.
func (c *Client) readHead(pc *h1Conn) (*http.Response, error) {
	if c.firstByte > 0 {
		_ = pc.nc.SetReadDeadline(time.Now().Add(c.firstByte))
	}
	pc.rd.left = maxHeadBytes + int64(pc.br.Buffered())
	defer func() { pc.rd.left = math.MaxInt64 }()
	var resp *http.Response
	var err error
	for range 5 {
		resp, err = http.ReadResponse(pc.br, nil)
		if err != nil || resp.StatusCode < 100 || resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			break
		}
	}
	if err == nil && resp.StatusCode == http.StatusSwitchingProtocols {
		err = errSwitchingProtocols
	} else if err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 {
		err = errors.New("net/http: too many 1xx informational responses")
	}
	if c.firstByte > 0 {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return nil, errHeadTimeout
		}
		_ = pc.nc.SetReadDeadline(time.Time{})
	}
	return resp, err
}

// cause is ctx's error once ctx is done (the connection was closed because of it), else err.
func cause(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return err
}

// h1Body is a leg's response body. At its end the connection goes back to the pool; closed
// before its end (the relay gave up, the client left) the connection is closed, so the
// engine sees the leg abort instead of a drain to the end of a long stream. After ctx is
// cancelled reads fail with ctx's error, as net/http's bodies do.
type h1Body struct {
	c    *Client
	p    *hostPool
	pc   *h1Conn
	body io.ReadCloser
	stop func() bool
	ctx  context.Context
	keep bool // the engine did not ask to close the connection
	// wrote, when set, delivers the result of a request write that ran beside the head
	// read: the connection is pooled only after that write succeeded.
	wrote chan error
	done  atomic.Bool // the connection was released (pooled or closed)
	eof   bool        // Read returned io.EOF (guarded by mu)
	mu    sync.Mutex  // held by Read: Close finishes the body only when no Read runs
}

var errReadAfterClose = errors.New("http: read on closed response body")

func (b *h1Body) Read(buf []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.eof {
		return 0, io.EOF // again, as net/http's bodies answer past their end
	}
	if b.done.Load() {
		return 0, errReadAfterClose
	}
	n, err := b.body.Read(buf)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.eof = true
		b.release(true)
		return n, io.EOF
	}
	b.release(false)
	return n, cause(b.ctx, err)
}

// Close releases the connection: back to the pool when the body was read to its end or
// its small rest arrives at once (finish), closed otherwise. Closing twice is a no-op.
// A Close while another goroutine is blocked in Read closes the connection, which ends
// that Read.
func (b *h1Body) Close() error {
	if b.done.Load() {
		return nil
	}
	if !b.mu.TryLock() { // a Read is in progress: never read beside it
		b.release(false)
		return nil
	}
	defer b.mu.Unlock()
	b.release(b.keep && b.finish())
	return nil
}

// finishWait and finishMax bound what Close reads of a body's rest to keep its connection.
const (
	finishWait = 2 * time.Millisecond
	finishMax  = 4 << 10
)

// finish reads the rest of the body when it is small and already on its way, and reports
// whether the body ended. A stream relayed up to its [DONE] event is closed with only the
// chunked terminator unread (uvicorn writes it right after the last event); reading it
// keeps the connection for the next leg instead of dialling a new one per stream. More
// than finishMax bytes (an engine still streaming to a client that left) or nothing within
// finishWait means the connection is closed, so the engine sees the abort.
func (b *h1Body) finish() bool {
	if b.ctx.Err() != nil {
		return false
	}
	if err := b.pc.nc.SetReadDeadline(time.Now().Add(finishWait)); err != nil {
		return false
	}
	var scratch [512]byte
	for read := 0; read <= finishMax; {
		n, err := b.body.Read(scratch[:])
		read += n
		if err == io.EOF {
			return b.pc.nc.SetReadDeadline(time.Time{}) == nil
		}
		if err != nil {
			return false
		}
	}
	return false
}

// release pools the connection when the body ended cleanly, the engine kept it alive and
// ctx's watcher had not fired; otherwise it closes it.
func (b *h1Body) release(atEOF bool) {
	if !b.done.CompareAndSwap(false, true) {
		return
	}
	watching := b.stop()
	if atEOF && b.keep && watching && b.wroteOK() {
		_ = b.body.Close() // at EOF: frees the reader without reading
		b.c.put(b.p, b.pc)
		return
	}
	_ = b.pc.nc.Close()
}

// wroteOK reports whether the request's write finished without error, waiting up to
// writeDone for a write that ran beside the head read (an engine that answered early may
// not have read the whole body: that connection is closed).
func (b *h1Body) wroteOK() bool {
	if b.wrote == nil {
		return true
	}
	t := time.NewTimer(writeDone)
	defer t.Stop()
	select {
	case err := <-b.wrote:
		return err == nil
	case <-t.C:
		return false
	}
}
