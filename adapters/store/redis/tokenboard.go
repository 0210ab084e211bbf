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

// TokenBoard is the Redis ports.TokenBoard. Each instance's table is the hash
// <prefix>tokload:<instance> (field worker URL, value tokens) expiring ttl after its last
// Publish; the sorted set <prefix>tokload:instances scores each instance by its expiry (unix
// ms) so Others finds the live tables without SCAN. Publish is one MULTI on the table's key
// (DEL, HSET, PEXPIRE) and one ZADD; Others one ZREMRANGEBYSCORE + ZRANGEBYSCORE and one
// pipelined HGETALL per other instance. The keys may live on different cluster slots.
type TokenBoard struct {
	c goredis.UniversalClient
	o Options
}

var _ ports.TokenBoard = (*TokenBoard)(nil)

// NewTokenBoard returns a Redis TokenBoard on client c (not closed by the board).
func NewTokenBoard(c goredis.UniversalClient, o Options) *TokenBoard {
	return &TokenBoard{c: c, o: o.withDefaults()}
}

func (b *TokenBoard) table(instance string) string { return b.o.Prefix + "tokload:" + instance }
func (b *TokenBoard) index() string                { return b.o.Prefix + "tokload:instances" }

// Publish replaces instance's table with loads, expiring ttl (at least 1 ms) from now.
// Errors: empty instance, ttl <= 0, Redis failures and timeouts (wrapped).
func (b *TokenBoard) Publish(ctx context.Context, instance string, loads map[string]int64, ttl time.Duration) error {
	if instance == "" || ttl <= 0 {
		return errors.New("redis token board: publish needs an instance and a ttl > 0")
	}
	ttl = max(ttl, time.Millisecond)
	ctx, cancel := context.WithTimeout(ctx, b.o.OpTimeout)
	defer cancel()
	fields := make([]any, 0, 2*len(loads))
	for w, n := range loads {
		if n > 0 {
			fields = append(fields, w, n)
		}
	}
	key := b.table(instance)
	_, err := b.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		p.Del(ctx, key)
		if len(fields) > 0 {
			p.HSet(ctx, key, fields...)
			p.PExpire(ctx, key, ttl)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redis token board: publish: %w", err)
	}
	exp := time.Now().Add(ttl).UnixMilli()
	if err := b.c.ZAdd(ctx, b.index(), goredis.Z{Score: float64(exp), Member: instance}).Err(); err != nil {
		return fmt.Errorf("redis token board: publish: %w", err)
	}
	return nil
}

// Others sums the unexpired tables of every instance but instance. Errors: Redis failures
// and timeouts (wrapped); a value that is not an integer is skipped.
func (b *TokenBoard) Others(ctx context.Context, instance string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.OpTimeout)
	defer cancel()
	now := strconv.FormatInt(time.Now().UnixMilli(), 10)
	if err := b.c.ZRemRangeByScore(ctx, b.index(), "-inf", now).Err(); err != nil {
		return nil, fmt.Errorf("redis token board: others: %w", err)
	}
	ids, err := b.c.ZRangeByScore(ctx, b.index(), &goredis.ZRangeBy{Min: "(" + now, Max: "+inf"}).Result()
	if err != nil {
		return nil, fmt.Errorf("redis token board: others: %w", err)
	}
	out := map[string]int64{}
	var cmds []*goredis.MapStringStringCmd
	_, err = b.c.Pipelined(ctx, func(p goredis.Pipeliner) error {
		for _, id := range ids {
			if id != instance {
				cmds = append(cmds, p.HGetAll(ctx, b.table(id)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redis token board: others: %w", err)
	}
	for _, c := range cmds {
		for w, v := range c.Val() {
			if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
				out[w] += n
			}
		}
	}
	return out, nil
}
