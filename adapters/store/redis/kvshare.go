package redis

import (
	"context"
	"errors"
	"fmt"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/ports"
)

// DefaultKVShareRecent is KVShareOptions.MaxRecent's default: entries kept for replicas
// that (re)join (a 3000-token prompt's entry is about 12 KB, so about 3 MB).
const DefaultKVShareRecent = 256

// KVShareOptions configure a KVShare; zero values take the defaults.
type KVShareOptions struct {
	Options
	// MaxRecent bounds the recent-entries list (default DefaultKVShareRecent).
	MaxRecent int
	// TTL is the recent list's life after its last Publish; 0 = the published entry's own
	// remaining life (at least 1 ms).
	TTL time.Duration
}

// KVShare is the Redis ports.KVShare. Entries (kvevent.EncodeShared) are PUBLISHed on the
// channel <prefix>kvspec (classic Pub/Sub, which a Redis Cluster broadcasts to every node)
// and LPUSHed on the list <prefix>{kvspec}:recent, trimmed to MaxRecent and expiring with
// the newest entry: one hash-tagged key, so it lives on one cluster slot. Calls are bounded
// by Options.OpTimeout.
type KVShare struct {
	c goredis.UniversalClient
	o KVShareOptions
}

var _ ports.KVShare = (*KVShare)(nil)

// NewKVShare returns a KVShare on client c (not closed by it).
func NewKVShare(c goredis.UniversalClient, o KVShareOptions) *KVShare {
	o.Options = o.Options.withDefaults()
	if o.MaxRecent <= 0 {
		o.MaxRecent = DefaultKVShareRecent
	}
	return &KVShare{c: c, o: o}
}

func (k *KVShare) channel() string { return k.o.Prefix + "kvspec" }
func (k *KVShare) recent() string  { return k.o.Prefix + "{kvspec}:recent" }

// Publish sends e and records it among the recent entries. Errors: an entry without a
// worker or block size, Redis failures and timeouts (wrapped).
func (k *KVShare) Publish(ctx context.Context, e kvevent.Shared) error {
	if e.Worker == "" || e.BlockSize <= 0 {
		return errors.New("redis kv share: an entry needs a worker and a block size")
	}
	ttl := k.o.TTL
	if ttl <= 0 {
		ttl = max(time.Until(e.Expires), time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(ctx, k.o.OpTimeout)
	defer cancel()
	b := kvevent.EncodeShared(e)
	if err := k.c.Publish(ctx, k.channel(), b).Err(); err != nil {
		return fmt.Errorf("redis kv share: publish: %w", err)
	}
	key := k.recent()
	_, err := k.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.LPush(ctx, key, b)
		p.LTrim(ctx, key, 0, int64(k.o.MaxRecent-1))
		p.PExpire(ctx, key, ttl)
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis kv share: recent list: %w", err)
	}
	return nil
}

// Listen subscribes to the channel and calls f for each entry that decodes (others are
// skipped), until ctx ends (ctx's error) or the connection fails (that error).
func (k *KVShare) Listen(ctx context.Context, ready func(), f func(kvevent.Shared)) error {
	ps := k.c.Subscribe(ctx, k.channel())
	defer func() { _ = ps.Close() }()
	sctx, cancel := context.WithTimeout(ctx, max(k.o.OpTimeout, time.Second))
	_, err := ps.Receive(sctx)
	cancel()
	if err != nil {
		return fmt.Errorf("redis kv share: subscribe: %w", err)
	}
	if ready != nil {
		ready()
	}
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() }) // a blocked receive ignores ctx
	defer stop()
	for {
		msg, err := ps.ReceiveMessage(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("redis kv share: receive: %w", err)
		}
		if e, err := kvevent.DecodeShared([]byte(msg.Payload)); err == nil {
			f(e)
		}
	}
}

// Recent returns the unexpired recent entries, newest first. Errors: Redis failures and
// timeouts (wrapped); undecodable list items are skipped.
func (k *KVShare) Recent(ctx context.Context) ([]kvevent.Shared, error) {
	ctx, cancel := context.WithTimeout(ctx, k.o.OpTimeout)
	defer cancel()
	items, err := k.c.LRange(ctx, k.recent(), 0, int64(k.o.MaxRecent-1)).Result()
	if err != nil {
		return nil, fmt.Errorf("redis kv share: recent: %w", err)
	}
	now := time.Now()
	out := make([]kvevent.Shared, 0, len(items))
	for _, it := range items {
		if e, err := kvevent.DecodeShared([]byte(it)); err == nil && now.Before(e.Expires) {
			out = append(out, e)
		}
	}
	return out, nil
}
