package grpcengine

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"google.golang.org/grpc"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Pool holds one gRPC channel per worker URL, created on first use. grpc.NewClient does
// not connect: the first RPC does, and a broken connection is re-established by grpc-go
// with backoff, so a channel is kept for the worker's lifetime (Forget drops it). Safe
// for concurrent use.
type Pool struct {
	opts Options

	mu     sync.Mutex
	conns  map[string]*grpc.ClientConn
	closed bool
}

var _ ports.GRPCEngines = (*Pool)(nil)

// New builds an empty Pool.
func New(o Options) *Pool {
	return &Pool{opts: o.withDefaults(), conns: map[string]*grpc.ClientConn{}}
}

// Target turns a worker URL into a gRPC dial target and reports whether it needs TLS:
// grpc://h:p → "h:p" plaintext, grpcs://h:p → "h:p" over TLS (smg-spec.md §9.1.6). A
// trailing DP-rank suffix ("@2") and a path are ignored; a missing port is 80 (grpc) or
// 443 (grpcs), as the http/https URLs SMG maps them to.
func Target(rawURL string) (target string, secure bool, err error) {
	base := worker.Worker{URL: rawURL}.BaseURL()
	switch {
	case strings.HasPrefix(base, "grpc://"):
	case strings.HasPrefix(base, "grpcs://"):
		secure = true
	default:
		return "", false, fmt.Errorf("grpcengine: %q is not a grpc:// or grpcs:// URL", rawURL)
	}
	u, err := url.Parse(base)
	if err != nil || u.Hostname() == "" {
		return "", false, fmt.Errorf("grpcengine: invalid worker URL %q", rawURL)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if secure {
			port = "443"
		}
	}
	return net.JoinHostPort(u.Hostname(), port), secure, nil
}

// Conn returns the channel to w, creating it on first use. Errors: an invalid URL, or the
// pool is closed.
func (p *Pool) Conn(w worker.Worker) (*grpc.ClientConn, error) {
	key := w.BaseURL()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, fmt.Errorf("grpcengine: pool closed")
	}
	if cc, ok := p.conns[key]; ok {
		return cc, nil
	}
	target, secure, err := Target(key)
	if err != nil {
		return nil, err
	}
	cc, err := grpc.NewClient(target, p.opts.dialOptions(secure)...)
	if err != nil {
		return nil, fmt.Errorf("grpcengine: channel to %s: %w", key, err)
	}
	p.conns[key] = cc
	return cc, nil
}

// SGLang returns an SglangScheduler client on w's channel.
func (p *Pool) SGLang(w worker.Worker) (sglangpb.SglangSchedulerClient, error) {
	cc, err := p.Conn(w)
	if err != nil {
		return nil, err
	}
	return sglangpb.NewSglangSchedulerClient(cc), nil
}

// VLLM returns a VllmEngine client on w's channel.
func (p *Pool) VLLM(w worker.Worker) (vllmpb.VllmEngineClient, error) {
	cc, err := p.Conn(w)
	if err != nil {
		return nil, err
	}
	return vllmpb.NewVllmEngineClient(cc), nil
}

// TokenSpeed returns a TokenSpeedScheduler client on w's channel.
func (p *Pool) TokenSpeed(w worker.Worker) (tokenspeedpb.TokenSpeedSchedulerClient, error) {
	cc, err := p.Conn(w)
	if err != nil {
		return nil, err
	}
	return tokenspeedpb.NewTokenSpeedSchedulerClient(cc), nil
}

// Encoder returns a TokenSpeedEncoder client on w's channel (EPD encode workers).
func (p *Pool) Encoder(w worker.Worker) (tokenspeedencoderpb.TokenSpeedEncoderClient, error) {
	cc, err := p.Conn(w)
	if err != nil {
		return nil, err
	}
	return tokenspeedencoderpb.NewTokenSpeedEncoderClient(cc), nil
}

// Forget closes and drops the channel to url (its base URL), if any.
func (p *Pool) Forget(rawURL string) {
	key := worker.Worker{URL: rawURL}.BaseURL()
	p.mu.Lock()
	cc := p.conns[key]
	delete(p.conns, key)
	p.mu.Unlock()
	if cc != nil {
		_ = cc.Close()
	}
}

// Close closes every channel; later calls to Conn fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	conns := p.conns
	p.conns = map[string]*grpc.ClientConn{}
	p.closed = true
	p.mu.Unlock()
	for _, cc := range conns {
		_ = cc.Close()
	}
	return nil
}
