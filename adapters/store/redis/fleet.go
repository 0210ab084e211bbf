package redis

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	goredis "github.com/redis/go-redis/v9"

	"github.com/smg-go/smg/ports"
)

// Fleet is the Redis ports.FleetStore: the worker registrations every gateway replica on the
// same Redis and prefix shares. Keys (one hash tag, so a Redis Cluster keeps them in one slot
// for the scripts): <prefix>{fleet}:workers, a hash id -> "<seq>\n<url>\n<spec JSON>";
// <prefix>{fleet}:urls, a hash url -> id; <prefix>{fleet}:version, a counter bumped by every
// change. Every change publishes the new version on <prefix>fleet:changes, which Watch turns
// into notices. Calls are bounded by Options.OpTimeout.
type Fleet struct {
	c                          goredis.UniversalClient
	o                          Options
	workers, urls, version, ch string

	mu       sync.Mutex
	watchers map[chan struct{}]struct{}
	ps       *goredis.PubSub
	done     chan struct{}
}

var _ ports.FleetStore = (*Fleet)(nil)

// putScript: KEYS workers, urls, version; ARGV id, url, spec, channel. Returns {1, seq} when
// added, {0, id} when the URL is registered (to id, which may be ARGV id: a retried put),
// {-1, url} when the id is taken by another URL.
var putScript = goredis.NewScript(`
local ex = redis.call('HGET', KEYS[2], ARGV[2])
if ex then return {0, ex} end
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then return {-1, cur} end
local v = redis.call('INCR', KEYS[3])
redis.call('HSET', KEYS[1], ARGV[1], v .. '\n' .. ARGV[2] .. '\n' .. ARGV[3])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('PUBLISH', ARGV[4], v)
return {1, tostring(v)}
`)

// deleteScript: KEYS workers, urls, version; ARGV id, channel. Returns 1 when removed.
var deleteScript = goredis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if not cur then return 0 end
local a = string.find(cur, '\n', 1, true)
local b = string.find(cur, '\n', a + 1, true)
local url = string.sub(cur, a + 1, b - 1)
redis.call('HDEL', KEYS[1], ARGV[1])
if redis.call('HGET', KEYS[2], url) == ARGV[1] then redis.call('HDEL', KEYS[2], url) end
local v = redis.call('INCR', KEYS[3])
redis.call('PUBLISH', ARGV[2], v)
return 1
`)

// NewFleet returns the Redis fleet on client c. It does not connect; Close stops a watch
// subscription (the caller closes c).
func NewFleet(c goredis.UniversalClient, o Options) *Fleet {
	o = o.withDefaults()
	base := o.Prefix + "{fleet}:"
	return &Fleet{c: c, o: o, workers: base + "workers", urls: base + "urls", version: base + "version",
		ch: o.Prefix + "fleet:changes", watchers: map[chan struct{}]struct{}{}}
}

func (f *Fleet) op(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, f.o.OpTimeout)
}

// Put adds r; see ports.FleetStore.
func (f *Fleet) Put(ctx context.Context, r ports.FleetRecord) (string, error) {
	if r.ID == "" || r.URL == "" || strings.Contains(r.URL, "\n") {
		return "", fmt.Errorf("redis fleet: record needs an id and a one-line url")
	}
	ctx, cancel := f.op(ctx)
	defer cancel()
	res, err := putScript.Run(ctx, f.c, []string{f.workers, f.urls, f.version}, r.ID, r.URL, r.Spec, f.ch).Slice()
	if err != nil {
		return "", fmt.Errorf("redis fleet put: %w", err)
	}
	if len(res) != 2 {
		return "", fmt.Errorf("redis fleet put: unexpected answer %v", res)
	}
	code, _ := res[0].(int64)
	val, _ := res[1].(string)
	switch code {
	case 1:
		return r.ID, nil
	case 0:
		if val == r.ID {
			return val, nil
		}
		return val, fmt.Errorf("%w: %s (id %s)", ports.ErrDuplicateURL, r.URL, val)
	default:
		_, url, _ := parseValue(val)
		return r.ID, fmt.Errorf("redis fleet: id %s already registered for %s", r.ID, url)
	}
}

// Delete removes the record with id; see ports.FleetStore.
func (f *Fleet) Delete(ctx context.Context, id string) error {
	ctx, cancel := f.op(ctx)
	defer cancel()
	if err := deleteScript.Run(ctx, f.c, []string{f.workers, f.urls, f.version}, id, f.ch).Err(); err != nil {
		return fmt.Errorf("redis fleet delete: %w", err)
	}
	return nil
}

// List returns the version and the records in Seq order, read in one transaction.
func (f *Fleet) List(ctx context.Context) (int64, []ports.FleetRecord, error) {
	ctx, cancel := f.op(ctx)
	defer cancel()
	var ver *goredis.StringCmd
	var all *goredis.MapStringStringCmd
	_, err := f.c.TxPipelined(ctx, func(p goredis.Pipeliner) error {
		ver = p.Get(ctx, f.version)
		all = p.HGetAll(ctx, f.workers)
		return nil
	})
	if err != nil && !errors.Is(err, goredis.Nil) {
		return 0, nil, fmt.Errorf("redis fleet list: %w", err)
	}
	v, err := versionOf(ver)
	if err != nil {
		return 0, nil, err
	}
	out := make([]ports.FleetRecord, 0, len(all.Val()))
	for id, val := range all.Val() {
		seq, url, spec := parseValue(val)
		out = append(out, ports.FleetRecord{ID: id, URL: url, Spec: []byte(spec), Seq: seq})
	}
	slices.SortFunc(out, func(a, b ports.FleetRecord) int { return int(a.Seq - b.Seq) })
	return v, out, nil
}

// Version returns the fleet's version (0 for a fleet never written).
func (f *Fleet) Version(ctx context.Context) (int64, error) {
	ctx, cancel := f.op(ctx)
	defer cancel()
	return versionOf(f.c.Get(ctx, f.version))
}

func versionOf(cmd *goredis.StringCmd) (int64, error) {
	s, err := cmd.Result()
	if errors.Is(err, goredis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("redis fleet version: %w", err)
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redis fleet version %q: %w", s, err)
	}
	return v, nil
}

// parseValue splits "<seq>\n<url>\n<spec>".
func parseValue(v string) (seq int64, url, spec string) {
	s, rest, _ := strings.Cut(v, "\n")
	url, spec, _ = strings.Cut(rest, "\n")
	seq, _ = strconv.ParseInt(s, 10, 64)
	return seq, url, spec
}

// Watch returns a notice channel (buffer 1, coalesced) fed by the change channel, and its
// stop function. The first watcher subscribes; go-redis resubscribes after a reconnect,
// and notices published meanwhile are lost (watchers poll Version for that).
func (f *Fleet) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	f.mu.Lock()
	f.watchers[ch] = struct{}{}
	if f.ps == nil {
		f.ps = f.c.Subscribe(context.Background(), f.ch)
		f.done = make(chan struct{})
		go f.listen(f.ps.Channel(), f.done)
	}
	f.mu.Unlock()
	return ch, func() {
		f.mu.Lock()
		delete(f.watchers, ch)
		f.mu.Unlock()
	}
}

func (f *Fleet) listen(msgs <-chan *goredis.Message, done chan struct{}) {
	defer close(done)
	for range msgs {
		f.mu.Lock()
		for w := range f.watchers {
			select {
			case w <- struct{}{}:
			default:
			}
		}
		f.mu.Unlock()
	}
}

// Close ends the change subscription and waits for its goroutine. Safe to call twice.
func (f *Fleet) Close() error {
	f.mu.Lock()
	ps, done := f.ps, f.done
	f.ps = nil
	f.mu.Unlock()
	if ps == nil {
		return nil
	}
	err := ps.Close()
	<-done
	return err
}
