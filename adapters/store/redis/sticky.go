package redis

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/ports"
)

// Sticky is the Redis ports.StickyStore: key <prefix>sticky:<key>, value
// "<ttl ms>|<worker URL>", expiring after its idle TTL. Get is one Lua script that reads
// and refreshes the expiry; Set is one SET ... PX; Delete one DEL.
type Sticky struct {
	c goredis.UniversalClient
	o Options
}

// NewSticky returns a Redis StickyStore on client c (not closed by the store).
func NewSticky(c goredis.UniversalClient, o Options) *Sticky {
	return &Sticky{c: c, o: o.withDefaults()}
}

func (s *Sticky) key(k string) string { return s.o.Prefix + "sticky:" + k }

// Get returns the worker pinned to key and restarts its idle expiry. Errors: Redis
// failures and timeouts (wrapped); a missing key is ok=false with a nil error.
func (s *Sticky) Get(ctx context.Context, key string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.OpTimeout)
	defer cancel()
	w, err := getStickyScript.Run(ctx, s.c, []string{s.key(key)}).Text()
	if errors.Is(err, goredis.Nil) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("redis sticky: get: %w", err)
	}
	return w, true, nil
}

// Set pins key to worker with idle expiry ttl (<= 0: none; below 1 ms: 1 ms). Errors:
// Redis failures and timeouts (wrapped).
func (s *Sticky) Set(ctx context.Context, key, worker string, ttl time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.OpTimeout)
	defer cancel()
	var ms int64
	if ttl > 0 {
		ms = max(ttl.Milliseconds(), 1)
	}
	v := strconv.FormatInt(ms, 10) + "|" + worker
	var exp time.Duration
	if ms > 0 {
		exp = time.Duration(ms) * time.Millisecond
	}
	if err := s.c.Set(ctx, s.key(key), v, exp).Err(); err != nil {
		return fmt.Errorf("redis sticky: set: %w", err)
	}
	return nil
}

// Delete removes key; an unknown key is not an error. Errors: Redis failures (wrapped).
func (s *Sticky) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, s.o.OpTimeout)
	defer cancel()
	if err := s.c.Del(ctx, s.key(key)).Err(); err != nil {
		return fmt.Errorf("redis sticky: delete: %w", err)
	}
	return nil
}

var _ ports.StickyStore = (*Sticky)(nil)
