package store

import (
	"context"
	"time"

	"github.com/smg-go/smg/ports"
)

// FallbackSticky is a ports.StickyStore that uses Primary (Redis) while it answers and
// Secondary (memory) while it does not; see the package doc. Set and Delete also write
// through to memory while Redis is up, so an outage keeps the pins this instance made;
// pins made in memory during an outage are not copied to Redis when it returns.
type FallbackSticky struct {
	primary, secondary ports.StickyStore
	h                  *health
}

// NewFallbackSticky wraps primary (Redis) with secondary (memory) as the fallback.
func NewFallbackSticky(primary, secondary ports.StickyStore, o FallbackOptions) *FallbackSticky {
	return &FallbackSticky{primary: primary, secondary: secondary, h: newHealth("sticky", o)}
}

// Down reports whether Redis is currently marked down.
func (f *FallbackSticky) Down() bool { return f.h.Down() }

// Get reads Redis, or memory when Redis is down or fails.
func (f *FallbackSticky) Get(ctx context.Context, key string) (string, bool, error) {
	if f.h.usePrimary() {
		w, ok, err := f.primary.Get(ctx, key)
		if err == nil {
			f.h.ok()
			return w, ok, nil
		}
		if !f.h.failed(ctx, "get", err) {
			return "", false, err
		}
	}
	f.h.fellBack("get")
	return f.secondary.Get(ctx, key)
}

// Set writes Redis and memory, or memory alone when Redis is down or fails.
func (f *FallbackSticky) Set(ctx context.Context, key, worker string, ttl time.Duration) error {
	if f.h.usePrimary() {
		err := f.primary.Set(ctx, key, worker, ttl)
		if err == nil {
			f.h.ok()
			return f.secondary.Set(ctx, key, worker, ttl)
		}
		if !f.h.failed(ctx, "set", err) {
			return err
		}
	}
	f.h.fellBack("set")
	return f.secondary.Set(ctx, key, worker, ttl)
}

// Delete deletes in Redis and memory, or memory alone when Redis is down or fails.
func (f *FallbackSticky) Delete(ctx context.Context, key string) error {
	if f.h.usePrimary() {
		err := f.primary.Delete(ctx, key)
		if err == nil {
			f.h.ok()
			return f.secondary.Delete(ctx, key)
		}
		if !f.h.failed(ctx, "delete", err) {
			return err
		}
	}
	f.h.fellBack("delete")
	return f.secondary.Delete(ctx, key)
}

var _ ports.StickyStore = (*FallbackSticky)(nil)
