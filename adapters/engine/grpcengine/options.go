package grpcengine

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/keepalive"
)

// The transport profile of SMG's gRPC channels (smg-spec.md §9.1.6,
// crates/grpc_client/src/channel.rs) and its Abort deadline (crates/grpc_client/src/lib.rs).
const (
	DefaultConnectTimeout    = 10 * time.Second
	DefaultKeepaliveInterval = 30 * time.Second
	DefaultKeepaliveTimeout  = 10 * time.Second
	DefaultTCPKeepalive      = 60 * time.Second
	DefaultStreamWindow      = 16 << 20 // bytes
	DefaultConnWindow        = 32 << 20 // bytes
	AbortDeadline            = 10 * time.Second
	// MaxMessageBytes bounds a received message (tokenizer chunks are 64 KiB; generate
	// responses with logprobs or hidden states can be large).
	MaxMessageBytes = 256 << 20
)

// Options tunes the channels. Zero values take the defaults above.
type Options struct {
	// ConnectTimeout bounds one connection attempt (TCP + HTTP/2 handshake).
	ConnectTimeout time.Duration
	// KeepaliveInterval is the HTTP/2 PING interval, sent also while idle; KeepaliveTimeout
	// is how long a PING may go unanswered before the connection is closed.
	KeepaliveInterval, KeepaliveTimeout time.Duration
	// TCPKeepalive is the TCP keep-alive period. TCP_NODELAY is Go's default.
	TCPKeepalive time.Duration
	// StreamWindow and ConnWindow are the initial HTTP/2 flow-control windows, bytes.
	// grpc-go cannot combine explicit windows with its adaptive (BDP) window, so the
	// seed's large initial windows are kept static.
	StreamWindow, ConnWindow int32
	// TLS configures grpcs:// channels; nil = the system roots, server name from the URL.
	TLS *tls.Config
	// AbortTimeout bounds every Abort RPC (default AbortDeadline).
	AbortTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.KeepaliveInterval <= 0 {
		o.KeepaliveInterval = DefaultKeepaliveInterval
	}
	if o.KeepaliveTimeout <= 0 {
		o.KeepaliveTimeout = DefaultKeepaliveTimeout
	}
	if o.TCPKeepalive <= 0 {
		o.TCPKeepalive = DefaultTCPKeepalive
	}
	if o.StreamWindow <= 0 {
		o.StreamWindow = DefaultStreamWindow
	}
	if o.ConnWindow <= 0 {
		o.ConnWindow = DefaultConnWindow
	}
	if o.AbortTimeout <= 0 {
		o.AbortTimeout = AbortDeadline
	}
	return o
}

// dialOptions builds the grpc-go options of one channel; secure selects TLS (grpcs://).
func (o Options) dialOptions(secure bool) []grpc.DialOption {
	d := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: o.TCPKeepalive}
	creds := insecure.NewCredentials()
	if secure {
		cfg := &tls.Config{MinVersion: tls.VersionTLS12}
		if o.TLS != nil {
			cfg = o.TLS.Clone()
		}
		creds = credentials.NewTLS(cfg)
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(creds),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return d.DialContext(ctx, "tcp", addr)
		}),
		// Reconnect backoff capped at 10 s (grpc-go's default cap is 120 s): a restarted
		// engine is reachable again by the next health probe, as with SMG's lazily
		// reconnecting channels.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: time.Second, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 10 * time.Second},
			MinConnectTimeout: o.ConnectTimeout,
		}),
		grpc.WithKeepaliveParams(keepalive.ClientParameters{
			Time:                o.KeepaliveInterval,
			Timeout:             o.KeepaliveTimeout,
			PermitWithoutStream: true,
		}),
		grpc.WithStaticStreamWindowSize(o.StreamWindow),
		grpc.WithStaticConnWindowSize(o.ConnWindow),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(MaxMessageBytes)),
	}
}
