// Package redis holds the Redis implementations of the shared-state ports
// (ports.SlotCounter, ports.StickyStore, ports.FleetStore), selected by --redis-url /
// SMG_REDIS_URL, on a single server or a Redis Cluster (--redis-cluster, or several seed
// nodes in the URL). Every script touches keys of one hash slot only (one key, or keys
// sharing a {hash tag}), so the adapters work unchanged on a cluster.
// Every gateway instance that uses the same Redis and key prefix shares the decode admission
// windows and the sticky keys, so N instances behave as one.
//
// Calls are bounded by Options.OpTimeout (default 100 ms) and never retried beyond one
// reconnect, so a dead or black-holed Redis costs a request at most about that long; the
// errors are returned, and adapters/store.Fallback* turns them into per-instance counting.
// Needs Redis >= 5 (scripts use TIME before writing, i.e. effects replication).
package redis

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultPrefix       = "smg:"
	DefaultOpTimeout    = 100 * time.Millisecond
	DefaultLeaseTTL     = 10 * time.Second
	DefaultPollInterval = 250 * time.Millisecond
)

// Options configure the Redis adapters. Zero values select the defaults.
type Options struct {
	// Prefix starts every key and channel name (default "smg:"). Instances that share state
	// must use the same prefix; tests use a random one.
	Prefix string
	// OpTimeout bounds every Redis call (default 100 ms).
	OpTimeout time.Duration
	// LeaseTTL is the slot lease time (default 10 s): slots of an instance that stopped
	// renewing return to the window within it.
	LeaseTTL time.Duration
	// PollInterval bounds every SlotCounter.Wait (default 250 ms), in case a release
	// notification was lost (Pub/Sub reconnect) or a lease expired.
	PollInterval time.Duration
	// Logger receives the adapters' warnings (default slog.Default()).
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return o
}

// NewClient parses url and returns a client tuned for the request path: context deadlines
// honoured, reads, writes and dials bounded by opTimeout (<= 0: DefaultOpTimeout; dials get
// 3x, at least 250 ms, so a TLS handshake fits), one retry, one dial attempt. It does not
// connect: a Redis that is down at start-up is not an error. The caller closes the client.
//
// A single server is a redis://, rediss:// or unix:// URL as go-redis's ParseURL accepts.
// A Redis Cluster (when cluster is true, or when the URL names several seed nodes) is a
// redis:// or rediss:// URL in go-redis's ParseClusterURL form, "redis://[user:pass@]h1:p1?addr=h2:p2",
// or with the seeds as a comma list, "redis://[user:pass@]h1:p1,h2:p2,h3:p3"; a cluster has
// only database 0, so another database number is an error. The cluster client discovers
// the other masters from the seeds and follows MOVED/ASK redirects.
func NewClient(url string, cluster bool, opTimeout time.Duration) (goredis.UniversalClient, error) {
	if opTimeout <= 0 {
		opTimeout = DefaultOpTimeout
	}
	if cluster || IsClusterURL(url) {
		o, err := ParseClusterURL(url)
		if err != nil {
			return nil, err
		}
		o.ContextTimeoutEnabled = true
		o.ReadTimeout = opTimeout
		o.WriteTimeout = opTimeout
		o.DialTimeout = max(3*opTimeout, 250*time.Millisecond)
		o.DialerRetries = 1
		o.PoolTimeout = opTimeout
		o.MaxRetries = 1
		o.DisableIdentity = true
		return goredis.NewClusterClient(o), nil
	}
	o, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	o.ContextTimeoutEnabled = true
	o.ReadTimeout = opTimeout
	o.WriteTimeout = opTimeout
	o.DialTimeout = max(3*opTimeout, 250*time.Millisecond)
	o.DialerRetries = 1
	o.PoolTimeout = opTimeout
	o.MaxRetries = 1
	o.DisableIdentity = true // no CLIENT SETINFO round trip on every new connection
	return goredis.NewClient(o), nil
}

// Ping checks that Redis answers within the op timeout.
func Ping(ctx context.Context, c goredis.UniversalClient, opTimeout time.Duration) error {
	if opTimeout <= 0 {
		opTimeout = DefaultOpTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return c.Ping(ctx).Err()
}

// RouteLogs sends go-redis's own log lines (dial failures, Pub/Sub reconnects: one every
// 100 ms while Redis is down) to log at DEBUG instead of stderr, so an outage is reported
// by the Fallback wrappers' transition logs, not by a flood. It sets go-redis's global
// logger: call it once, from the composition root or a TestMain.
func RouteLogs(log *slog.Logger) {
	goredis.SetLogger(debugLogger{log})
}

type debugLogger struct{ log *slog.Logger }

func (d debugLogger) Printf(ctx context.Context, format string, v ...any) {
	if d.log.Enabled(ctx, slog.LevelDebug) {
		d.log.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "go-redis")
	}
}
