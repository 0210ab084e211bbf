package redistest

import (
	"io"
	"net"
	"strings"
	"sync"
	"testing"
)

// Proxy is a loopback TCP proxy in front of the test Redis that a test can cut and restore,
// to simulate Redis going away mid-run without touching the shared server.
type Proxy struct {
	l      net.Listener
	target string
	path   string // the test Redis URL's "/<db>" (and query), kept so both ends use one DB
	mu     sync.Mutex
	cut    bool
	conns  map[net.Conn]struct{}
}

// NewProxy starts a proxy to the test Redis (see URL) on 127.0.0.1:0; closed when t ends.
func NewProxy(t testing.TB) *Proxy {
	t.Helper()
	target, path := strings.TrimPrefix(URL(t), "redis://"), "/0"
	if i := strings.IndexByte(target, '/'); i >= 0 {
		target, path = target[:i], target[i:]
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{l: l, target: target, path: path, conns: make(map[net.Conn]struct{})}
	go p.serve()
	t.Cleanup(func() {
		_ = l.Close()
		p.Cut()
	})
	return p
}

// URL is the proxy's redis:// URL, on the same database as the test Redis's URL.
func (p *Proxy) URL() string { return "redis://" + p.l.Addr().String() + p.path }

// Cut closes every proxied connection and closes new ones at once, until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for c := range p.conns {
		_ = c.Close()
	}
	clear(p.conns)
}

// Restore lets connections through again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = false
}

func (p *Proxy) serve() {
	for {
		c, err := p.l.Accept()
		if err != nil {
			return
		}
		go p.pipe(c)
	}
}

func (p *Proxy) pipe(c net.Conn) {
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	p.mu.Unlock()
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.cut {
		p.mu.Unlock()
		_ = c.Close()
		_ = up.Close()
		return
	}
	p.conns[c], p.conns[up] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(up, c); done <- struct{}{} }()
	go func() { _, _ = io.Copy(c, up); done <- struct{}{} }()
	<-done
	_ = c.Close()
	_ = up.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, up)
	p.mu.Unlock()
}
