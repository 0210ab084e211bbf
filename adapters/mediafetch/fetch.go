// Package mediafetch reads the bytes of the media a request references: data: URLs
// (base64 or percent-encoded) and http(s) URLs, bounded in size and time. It implements
// ports.MediaFetcher for the gRPC pipeline's gateway-side media processing.
package mediafetch

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/ports"
)

// Defaults of Options.
const (
	DefaultMaxBytes = 20 << 20 // 20 MiB per item
	DefaultTimeout  = 10 * time.Second
)

// Options bound one fetch.
type Options struct {
	// MaxBytes is the largest item in bytes (decoded for data URLs); 0 = DefaultMaxBytes.
	MaxBytes int64
	// Timeout bounds an http(s) fetch from dial to the last byte; 0 = DefaultTimeout.
	Timeout time.Duration
	// Client is the HTTP client; nil = a fresh client without redirects to other schemes
	// whose dialer refuses link-local, cloud metadata and unspecified addresses.
	Client *http.Client
}

// Fetcher implements ports.MediaFetcher.
type Fetcher struct {
	max    int64
	client *http.Client
}

var _ ports.MediaFetcher = (*Fetcher)(nil)

// New returns a Fetcher with o's bounds.
func New(o Options) *Fetcher {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	c := o.Client
	if c == nil {
		c = &http.Client{Timeout: o.Timeout, Transport: guardedTransport(o.Timeout), CheckRedirect: func(r *http.Request, via []*http.Request) error {
			if len(via) >= 5 {
				return errors.New("too many redirects")
			}
			if r.URL.Scheme != "http" && r.URL.Scheme != "https" {
				return fmt.Errorf("redirect to scheme %q", r.URL.Scheme)
			}
			return nil
		}}
	}
	return &Fetcher{max: o.MaxBytes, client: c}
}

func bad(format string, args ...any) *errs.Error {
	return errs.New(http.StatusBadRequest, wire.CodeInvalidRequest, format, args...)
}

// Fetch returns the bytes raw names. Errors are 400 invalid_request *errs.Error values: a
// malformed data URL, a scheme other than data/http/https, an item over MaxBytes, an
// unreachable URL, a non-2xx answer or the timeout.
func (f *Fetcher) Fetch(ctx context.Context, raw string) ([]byte, error) {
	switch {
	case strings.HasPrefix(raw, "data:"):
		return f.dataURL(raw)
	case strings.HasPrefix(raw, "http://"), strings.HasPrefix(raw, "https://"):
		return f.http(ctx, raw)
	}
	scheme, _, _ := strings.Cut(raw, ":")
	if len(scheme) > 16 {
		scheme = scheme[:16]
	}
	return nil, bad("media URL scheme %q is not supported (use data:, http: or https:)", scheme)
}

func (f *Fetcher) dataURL(raw string) ([]byte, error) {
	meta, payload, ok := strings.Cut(raw[len("data:"):], ",")
	if !ok {
		return nil, bad("malformed data URL: no ',' after the media type")
	}
	if strings.HasSuffix(meta, ";base64") {
		if int64(base64.StdEncoding.DecodedLen(len(payload))) > f.max+3 {
			return nil, bad("media item is larger than %d bytes", f.max)
		}
		b, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			if b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(payload, "=")); err != nil {
				return nil, bad("malformed data URL: bad base64: %v", err)
			}
		}
		if int64(len(b)) > f.max {
			return nil, bad("media item is larger than %d bytes", f.max)
		}
		return b, nil
	}
	s, err := url.PathUnescape(payload)
	if err != nil {
		return nil, bad("malformed data URL: %v", err)
	}
	if int64(len(s)) > f.max {
		return nil, bad("media item is larger than %d bytes", f.max)
	}
	return []byte(s), nil
}

func (f *Fetcher) http(ctx context.Context, raw string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, raw, nil)
	if err != nil {
		return nil, bad("bad media URL: %v", err)
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, bad("fetching media %s: %v", redact(raw), err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, bad("fetching media %s: status %d", redact(raw), resp.StatusCode)
	}
	if resp.ContentLength > f.max {
		return nil, bad("media item %s is larger than %d bytes", redact(raw), f.max)
	}
	var buf bytes.Buffer
	if resp.ContentLength > 0 {
		buf.Grow(int(resp.ContentLength) + bytes.MinRead) // one allocation, not a doubling series of garbage
	}
	n, err := io.Copy(&buf, io.LimitReader(resp.Body, f.max+1))
	if err != nil {
		return nil, bad("fetching media %s: %v", redact(raw), err)
	}
	if n > f.max {
		return nil, bad("media item %s is larger than %d bytes", redact(raw), f.max)
	}
	return buf.Bytes(), nil
}

// redact drops a URL's query and user info from messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	u.RawQuery, u.User, u.Fragment = "", nil, ""
	return u.String()
}
