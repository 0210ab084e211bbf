// Package httpengine is the HTTP EngineClient: it POSTs PD legs to SGLang and vLLM workers
// over one shared, tuned connection pool (smg-spec.md §2.5.4, §2.13).
package httpengine

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/smg-go/smg/ports"
)

// Options tunes the client. Zero values take the defaults noted on each field.
type Options struct {
	// ConnectTimeout bounds TCP connect to an engine (default 10 s, smg-spec.md §2.13).
	ConnectTimeout time.Duration
	// FirstByteTimeout bounds the wait for a response head after the body was written
	// (0 = no bound beyond the request context).
	FirstByteTimeout time.Duration
	// IdleConnTimeout closes pooled connections idle this long (default 90 s).
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerHost keeps this many idle connections per engine (default 512).
	MaxIdleConnsPerHost int
	// InjectHeaders, when set, adds trace context (W3C traceparent) to each leg's headers.
	InjectHeaders func(ctx context.Context, h http.Header)
}

// Client implements ports.EngineClient. Legs to plain-HTTP workers go over its own
// HTTP/1.1 connection pool (h1pool.go, h1send.go): each leg is written and its head read on
// the caller's goroutine, with net/http's response parser (a body over 12 KiB is written on a
// goroutine of its own meanwhile, so an engine may answer before reading it). That costs
// about half the CPU of net/http's transport, whose reader and writer goroutines per
// connection hand every leg across three goroutines (docs/benchmarks.md). https workers,
// and worker URLs with userinfo or a query, use net/http's transport.
type Client struct {
	// tr carries the legs to https workers. Legs go to it directly: http.Client.Do would
	// clone the headers and set up body rewinding for redirects on every call, and a PD leg
	// never follows one.
	tr     *http.Transport
	inject func(ctx context.Context, h http.Header)

	pools       sync.Map // base URL -> *hostPool
	dialer      *net.Dialer
	idleTimeout time.Duration
	maxIdle     int
	firstByte   time.Duration
	sweepArmed  atomic.Bool
}

// jsonContentType is the Content-Type of every leg; shared read-only (the transport only
// reads request headers).
var jsonContentType = []string{"application/json"}

var _ ports.EngineClient = (*Client)(nil)

// New builds a Client with its own transport (keep-alive, no compression so SSE bytes are
// relayed as the engine wrote them, no proxy from the environment: engines are direct peers).
func New(o Options) *Client {
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 10 * time.Second
	}
	if o.IdleConnTimeout <= 0 {
		o.IdleConnTimeout = 90 * time.Second
	}
	if o.MaxIdleConnsPerHost <= 0 {
		o.MaxIdleConnsPerHost = 512
	}
	d := &net.Dialer{Timeout: o.ConnectTimeout, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		DialContext:           d.DialContext,
		MaxIdleConns:          0, // no global cap; per-host cap below
		MaxIdleConnsPerHost:   o.MaxIdleConnsPerHost,
		IdleConnTimeout:       o.IdleConnTimeout,
		ResponseHeaderTimeout: o.FirstByteTimeout,
		DisableCompression:    true,
		ForceAttemptHTTP2:     false,
	}
	return &Client{tr: tr, inject: o.InjectHeaders,
		dialer: d, idleTimeout: o.IdleConnTimeout, maxIdle: o.MaxIdleConnsPerHost, firstByte: o.FirstByteTimeout}
}

// Send POSTs req.Body to req.Worker.BaseURL()+req.Path and returns when the response head
// arrives. Content-Type is always application/json; a worker registered with an api_key gets
// it as `Authorization: Bearer <key>` in place of the client's. A transport failure (refused, reset,
// timeout before the head, context cancelled) returns a nil response and a *url.Error
// (`Post "<url>": <cause>`, as http.Client reports it). Redirects are not followed: a 3xx is
// returned as it is. Cancelling ctx later aborts reading the body, which closes the
// connection so the engine sees the leg abort; so does closing the body before its end.
// A body read to its end returns its connection to the keep-alive pool.
func (c *Client) Send(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	base := req.Worker.BaseURL()
	if p := c.poolFor(base); p != nil {
		return c.sendH1(ctx, p, base, req)
	}
	u := base + req.Path
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(req.Body))
	if err != nil {
		return nil, fmt.Errorf("build request to %s: %w", u, err)
	}
	for k, vs := range req.Header {
		hr.Header[k] = vs
	}
	hr.Header["Content-Type"] = jsonContentType
	if key := req.Worker.APIKey; key != "" {
		hr.Header.Set("Authorization", "Bearer "+key) // the worker's own key wins over the client's
	}
	hr.ContentLength = int64(len(req.Body))
	if c.inject != nil {
		c.inject(ctx, hr.Header)
	}
	resp, err := c.tr.RoundTrip(hr)
	if err != nil {
		return nil, &url.Error{Op: "Post", URL: u, Err: err}
	}
	return &ports.LegResponse{Status: resp.StatusCode, Header: resp.Header, Body: resp.Body}, nil
}

// CloseIdle closes idle pooled connections (on shutdown).
func (c *Client) CloseIdle() {
	c.closeIdle()
	c.tr.CloseIdleConnections()
}
