package httpengine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"time"
)

// The plain-HTTP fast path (issue #10). A PD leg is one POST with a known body length,
// answered by JSON or an SSE stream; net/http's Transport serves it with two goroutines per
// connection (a write loop and a read loop) and several channel handoffs per request. Here
// the caller's goroutine writes the request (one writev) and reads the response head and
// body straight from the connection, with net/http's own response parser
// (http.ReadResponse) for framing (Content-Length, chunked). Keep-alive connections are
// pooled per engine, LIFO; a pooled connection is checked for a FIN or RST from the engine
// before reuse. https:// engines and unusual URLs keep using the net/http Transport.

// readBufSize is each connection's read buffer (bytes), the size net/http uses.
const readBufSize = 4 << 10

// errFirstByte is returned when Options.FirstByteTimeout passes before the response head.
var errFirstByte = errors.New("timeout awaiting response headers (--first-byte-timeout-secs)")

// hostPool is the idle keep-alive connections to one engine base URL.
type hostPool struct {
	c *Client
	// addr is the dial address host:port; host the Host header; prefix the base URL's path.
	addr, host, prefix string

	mu   sync.Mutex
	idle []*h1conn // LIFO: the most recently used connection first
}

// h1conn is one keep-alive connection to an engine.
type h1conn struct {
	nc     net.Conn
	br     *bufio.Reader
	idleAt time.Time
	// reused reports that the connection served a request before.
	reused bool
}

// poolFor returns the pool of base, or nil when base is not a plain http:// URL with a
// host and no user info, query or fragment (those go through net/http).
func (c *Client) poolFor(base string) *hostPool {
	if p, ok := c.pools.Load(base); ok {
		return p.(*hostPool)
	}
	u, err := url.Parse(base)
	if err != nil || u.Scheme != "http" || u.Host == "" || u.User != nil || u.RawQuery != "" ||
		u.Fragment != "" || u.Opaque != "" {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	p := &hostPool{c: c, addr: addr, host: u.Host, prefix: u.EscapedPath()}
	actual, _ := c.pools.LoadOrStore(base, p)
	return actual.(*hostPool)
}

// get returns a live idle connection, or dials a new one within ctx and ConnectTimeout.
func (p *hostPool) get(ctx context.Context) (*h1conn, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		cn := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if time.Since(cn.idleAt) < p.c.idleTimeout && cn.br.Buffered() == 0 && alive(cn.nc) {
			return cn, nil
		}
		_ = cn.nc.Close()
	}
	nc, err := p.c.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, err
	}
	return &h1conn{nc: nc, br: bufio.NewReaderSize(nc, readBufSize)}, nil
}

// put returns cn to the pool, or closes it when the pool is full.
func (p *hostPool) put(cn *h1conn) {
	cn.idleAt = time.Now()
	cn.reused = true
	p.mu.Lock()
	if len(p.idle) < p.c.maxIdle {
		p.idle = append(p.idle, cn)
		p.mu.Unlock()
		return
	}
	p.mu.Unlock()
	_ = cn.nc.Close()
}

// closeIdle closes every idle connection.
func (p *hostPool) closeIdle() {
	p.mu.Lock()
	idle := p.idle
	p.idle = nil
	p.mu.Unlock()
	for _, cn := range idle {
		_ = cn.nc.Close()
	}
}

// send runs one leg on the fast path. hdr holds the caller's headers (and trace context);
// Host, User-Agent, Content-Type and Content-Length are written here.
func (p *hostPool) send(ctx context.Context, path string, hdr http.Header, body []byte) (*http.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	head, err := p.appendHead(make([]byte, 0, 256+len(path)), path, hdr, len(body))
	if err != nil {
		return nil, err
	}
	cn, err := p.get(ctx)
	if err != nil {
		return nil, err
	}
	// Cancelling ctx closes the connection: a blocked write or read returns at once and the
	// engine sees the leg abort. stop reports false once that has happened.
	stop := context.AfterFunc(ctx, func() { _ = cn.nc.Close() })
	fail := func(err error) (*http.Response, error) {
		stop()
		_ = cn.nc.Close()
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, err
	}
	bufs := net.Buffers{head, body}
	if _, err := bufs.WriteTo(cn.nc); err != nil {
		return fail(err)
	}
	if t := p.c.firstByte; t > 0 {
		_ = cn.nc.SetReadDeadline(time.Now().Add(t))
	}
	resp, err := readHead(cn.br)
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = errFirstByte
		}
		return fail(err)
	}
	if p.c.firstByte > 0 {
		_ = cn.nc.SetReadDeadline(time.Time{})
	}
	// Reusable after the body: HTTP/1.1 keep-alive with a delimited body.
	keep := !resp.Close && resp.ProtoAtLeast(1, 1) &&
		(resp.ContentLength >= 0 || (len(resp.TransferEncoding) > 0 && resp.TransferEncoding[0] == "chunked"))
	resp.Body = &h1body{ctx: ctx, r: resp.Body, cn: cn, pool: p, stop: stop, keep: keep}
	return resp, nil
}

// readHead reads the response head, skipping 1xx interim responses (an engine sends none
// unless asked; net/http skips them the same way).
func readHead(br *bufio.Reader) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF // the engine closed the connection without answering
			}
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
	}
}

// appendHead renders the request line and headers. Error: a header name or value that
// cannot be sent (net/http refuses the same).
func (p *hostPool) appendHead(b []byte, path string, hdr http.Header, n int) ([]byte, error) {
	b = append(b, "POST "...)
	b = append(b, p.prefix...)
	b = append(b, path...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, p.host...)
	b = append(b, "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(n), 10)
	b = append(b, "\r\n"...)
	for k, vs := range hdr {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Content-Type", "Transfer-Encoding", "Connection", "User-Agent":
			continue // written above, or hop-by-hop
		}
		if !validHeaderName(k) {
			return nil, errors.New("invalid header field name " + strconv.Quote(k))
		}
		for _, v := range vs {
			if !validHeaderValue(v) {
				return nil, errors.New("invalid header field value for " + strconv.Quote(k))
			}
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	return append(b, "\r\n"...), nil
}

// validHeaderName reports whether k is an RFC 9110 token.
func validHeaderName(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c <= ' ' || c >= 0x7f || isSeparator(c) {
			return false
		}
	}
	return true
}

func isSeparator(c byte) bool {
	switch c {
	case '(', ')', '<', '>', '@', ',', ';', ':', '\\', '"', '/', '[', ']', '?', '=', '{', '}':
		return true
	}
	return false
}

// validHeaderValue reports whether v has no control character other than tab (no CR or
// LF: a value can never split the head).
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// h1body is a fast-path response body. Read to EOF, the connection goes back to the pool
// (when keep-alive); closed early, the connection is closed so the engine sees the abort.
// Close may be called from another goroutine than Read.
type h1body struct {
	ctx  context.Context
	r    io.ReadCloser
	pool *hostPool
	stop func() bool
	keep bool

	mu sync.Mutex
	cn *h1conn // nil once released
}

func (b *h1body) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == nil {
		return n, nil
	}
	if err == io.EOF {
		b.release(true)
		return n, io.EOF
	}
	b.release(false)
	if cerr := b.ctx.Err(); cerr != nil {
		err = cerr // cancelled: report why, like net/http
	}
	return n, err
}

func (b *h1body) Close() error {
	b.release(false)
	return nil
}

// release gives the connection back (complete body, keep-alive, not cancelled, nothing
// left in the buffer) or closes it. Idempotent.
func (b *h1body) release(complete bool) {
	b.mu.Lock()
	cn := b.cn
	b.cn = nil
	b.mu.Unlock()
	if cn == nil {
		return
	}
	if b.stop() && complete && b.keep && cn.br.Buffered() == 0 {
		b.pool.put(cn)
		return
	}
	_ = cn.nc.Close()
}
