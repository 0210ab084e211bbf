package httpengine

import (
	"bufio"
	"context"
	"math"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"
)

// hostPool is the keep-alive pool of one plain-HTTP engine address: a LIFO stack of idle
// connections (the most recently used is reused first, so a quiet pool ages from the
// bottom), and the request targets already built for it.
type hostPool struct {
	addr string // dial address, host:port
	host string // Host header, as the worker URL spells it
	// prefix is the worker URL's escaped path ("" or "/v1" style), prepended to each leg path.
	prefix string

	mu       sync.Mutex
	idle     []*h1Conn
	targets  map[string]string // leg path -> request target
	lastUsed time.Time         // the last return of a connection
	dead     bool              // dropped by the sweep: returned connections are closed
}

// h1Conn is one engine connection with its buffered reader and writer (4 KiB each, as
// net/http's transport uses). br reads through rd, which bounds a response head.
type h1Conn struct {
	nc        net.Conn
	rd        limitReader
	br        *bufio.Reader
	bw        *bufio.Writer
	idleSince time.Time
}

// limitReader reads nc while left stays positive, then fails with errHeadTooLarge: readHead
// sets left to maxHeadBytes while it parses a head (textproto buffers a header line and
// the header block without a bound of its own) and lifts it for the body.
type limitReader struct {
	nc   net.Conn
	left int64
}

func (r *limitReader) Read(b []byte) (int, error) {
	if r.left <= 0 {
		return 0, errHeadTooLarge
	}
	if int64(len(b)) > r.left {
		b = b[:r.left]
	}
	n, err := r.nc.Read(b)
	r.left -= int64(n)
	return n, err
}

// poolFor returns the pool of a plain-HTTP base URL, or nil when the URL needs what only
// net/http does (https, userinfo, a query): those legs keep the net/http transport.
func (c *Client) poolFor(base string) *hostPool {
	if p, ok := c.pools.Load(base); ok {
		return p.(*hostPool)
	}
	if !strings.HasPrefix(base, "http://") {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || u.Host == "" || u.User != nil || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || u.Opaque != "" {
		return nil
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	p := &hostPool{addr: addr, host: u.Host, prefix: strings.TrimSuffix(u.EscapedPath(), "/"), targets: map[string]string{}}
	actual, _ := c.pools.LoadOrStore(base, p)
	return actual.(*hostPool)
}

// target is the request target of a leg path on this pool: the URL's path prefix plus the
// path, escaped as net/http would send it.
func (p *hostPool) target(path string) string {
	p.mu.Lock()
	t, ok := p.targets[path]
	p.mu.Unlock()
	if ok {
		return t
	}
	t = p.prefix + path
	if u, err := url.Parse("http://h" + t); err == nil {
		t = u.EscapedPath()
	}
	if t == "" {
		t = "/"
	}
	p.mu.Lock()
	if len(p.targets) < 64 { // leg paths are the few engine routes; never grow unbounded
		p.targets[path] = t
	}
	p.mu.Unlock()
	return t
}

// get returns an idle connection that is still open (reused = true), or dials a new one
// bounded by ctx and the connect timeout. Idle connections past the idle timeout, or that
// the engine closed or wrote to while idle, are closed on the way.
func (c *Client) get(ctx context.Context, p *hostPool) (*h1Conn, bool, error) {
	for {
		p.mu.Lock()
		n := len(p.idle)
		if n == 0 {
			p.mu.Unlock()
			break
		}
		pc := p.idle[n-1]
		p.idle[n-1] = nil
		p.idle = p.idle[:n-1]
		p.mu.Unlock()
		if time.Since(pc.idleSince) < c.idleTimeout && pc.br.Buffered() == 0 && alive(pc.nc) {
			return pc, true, nil
		}
		_ = pc.nc.Close()
	}
	nc, err := c.dialer.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, false, err
	}
	pc := &h1Conn{nc: nc, rd: limitReader{nc: nc, left: math.MaxInt64}, bw: bufio.NewWriterSize(nc, 4096)}
	pc.br = bufio.NewReaderSize(&pc.rd, 4096)
	return pc, false, nil
}

// put returns a connection whose response was read to its end to the pool, or closes it
// when the pool already keeps MaxIdleConnsPerHost. It arms the idle sweep.
func (c *Client) put(p *hostPool, pc *h1Conn) {
	pc.idleSince = time.Now()
	p.mu.Lock()
	p.lastUsed = pc.idleSince
	if p.dead || len(p.idle) >= c.maxIdle {
		p.mu.Unlock()
		_ = pc.nc.Close()
		return
	}
	p.idle = append(p.idle, pc)
	p.mu.Unlock()
	c.armSweep()
}

// armSweep schedules one sweep half an idle timeout from now unless one is pending: pooled
// connections of a worker that gets no more legs (removed, or idle) are closed instead of
// sitting half-closed once the engine drops them (uvicorn does after 5 s).
func (c *Client) armSweep() {
	if c.sweepArmed.CompareAndSwap(false, true) {
		time.AfterFunc(c.idleTimeout/2, c.sweep) // so an idle connection lives at most 1.5 timeouts
	}
}

// sweep closes idle connections past the idle timeout or no longer open, drops the pools
// of worker URLs that had no leg for an idle timeout, and re-arms while any pool is left
// to watch.
func (c *Client) sweep() {
	c.sweepArmed.Store(false)
	left := false
	c.pools.Range(func(key, v any) bool {
		p := v.(*hostPool)
		p.mu.Lock()
		kept := p.idle[:0]
		for _, pc := range p.idle {
			if time.Since(pc.idleSince) < c.idleTimeout && pc.br.Buffered() == 0 && alive(pc.nc) {
				kept = append(kept, pc)
				continue
			}
			_ = pc.nc.Close()
		}
		clear(p.idle[len(kept):])
		p.idle = kept
		switch {
		case len(kept) > 0:
			left = true
		case time.Since(p.lastUsed) >= c.idleTimeout:
			// No leg for a whole idle timeout (a removed worker, a pod IP gone): drop
			// the pool, so the map does not grow with every worker URL ever seen.
			p.dead = true
			c.pools.CompareAndDelete(key, p)
		default:
			left = true // empty but recent: look again
		}
		p.mu.Unlock()
		return true
	})
	if left {
		c.armSweep()
	}
}

// closeIdle closes every pooled connection (connections in use are returned later as
// usual).
func (c *Client) closeIdle() {
	c.pools.Range(func(_, v any) bool {
		p := v.(*hostPool)
		p.mu.Lock()
		for _, pc := range p.idle {
			_ = pc.nc.Close()
		}
		clear(p.idle)
		p.idle = p.idle[:0]
		p.mu.Unlock()
		return true
	})
}
