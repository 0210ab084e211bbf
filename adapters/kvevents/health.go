package kvevents

import (
	"log/slog"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v5"
)

// Health is one subscription's state, for metrics, /workers and smg doctor. A copy: read
// it with Subscriber.Health at any time.
type Health struct {
	// Transport is "zmq" or "grpc"; Endpoint the address subscribed to (ZMQ endpoint, or
	// the worker URL for gRPC).
	Transport, Endpoint string
	// Connected: the socket or stream is up now.
	Connected bool
	// Disabled: the engine does not offer the stream (gRPC Unimplemented); Run returned.
	Disabled bool
	// HasSeq and LastSeq: the last sequence number applied.
	HasSeq  bool
	LastSeq uint64
	// Batches counts batches applied (replayed ones included).
	Batches uint64
	// Gaps counts sequence gaps seen; Replays those recovered by replay; Resets the times
	// the consumer was told to drop the worker's entries (gaps not recovered, restarts,
	// OutOfRange/DataLoss).
	Gaps, Replays, Resets uint64
	// Bootstraps counts first contacts whose buffered history was replayed (ZMQ).
	Bootstraps uint64
	// DecodeErrors counts messages that were not a valid KV-event batch.
	DecodeErrors uint64
	// Reconnects counts connection or stream losses after a successful subscribe;
	// DialFailures failed attempts to subscribe.
	Reconnects, DialFailures uint64
	// ConnectedAt is when the current connection came up; LastBatchAt when the last batch
	// arrived (zero before the first).
	ConnectedAt, LastBatchAt time.Time
	// Lag is arrival time minus the engine's timestamp of the last batch (clock skew
	// included); 0 when the engine sent no timestamp.
	Lag time.Duration
	// LastError is the last transport or decode error, "" if none.
	LastError string
}

// Idle is how long the subscription has gone without a batch at now: since the last batch,
// or since the connection came up if none arrived; 0 when disconnected.
func (h Health) Idle(now time.Time) time.Duration {
	if !h.Connected {
		return 0
	}
	since := h.LastBatchAt
	if since.Before(h.ConnectedAt) {
		since = h.ConnectedAt
	}
	return now.Sub(since)
}

// Stalled reports a connected subscription idle for longer than after at now. An idle
// engine publishes nothing either, so a stall is a hint for operators, not a fault.
func (h Health) Stalled(now time.Time, after time.Duration) bool {
	return h.Connected && h.Idle(now) > after
}

// Options are the knobs shared by both transports; zero values take the defaults.
type Options struct {
	// Logger receives connection changes, resets and (rate-limited) decode errors.
	Logger *slog.Logger
	// BackoffMin and BackoffMax bound the resubscribe backoff: BackoffMin doubling up to
	// BackoffMax, reset after a successful subscribe (defaults 100 ms and 30 s, as SMG's
	// kv_event_monitor, reference §3.3).
	BackoffMin, BackoffMax time.Duration
	// ReplayTimeout bounds one ZMQ replay exchange (default 5 s).
	ReplayTimeout time.Duration
	// DialTimeout bounds one ZMQ connect (default 5 s).
	DialTimeout time.Duration
	// LogEvery is the minimum interval between two decode-error log lines (default 1 min);
	// errors in between are counted and reported with the next line.
	LogEvery time.Duration
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.BackoffMin <= 0 {
		o.BackoffMin = 100 * time.Millisecond
	}
	if o.BackoffMax <= 0 {
		o.BackoffMax = 30 * time.Second
	}
	if o.BackoffMax < o.BackoffMin {
		o.BackoffMax = o.BackoffMin
	}
	if o.ReplayTimeout <= 0 {
		o.ReplayTimeout = 5 * time.Second
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 5 * time.Second
	}
	if o.LogEvery <= 0 {
		o.LogEvery = time.Minute
	}
	return o
}

func (o Options) backoff() *backoff.ExponentialBackOff {
	return &backoff.ExponentialBackOff{InitialInterval: o.BackoffMin, RandomizationFactor: 0,
		Multiplier: 2, MaxInterval: o.BackoffMax}
}

// state is the mutable health shared between the run loop and Health readers.
type state struct {
	mu sync.Mutex
	h  Health

	log        *slog.Logger
	logEvery   time.Duration
	lastLog    time.Time
	suppressed uint64
}

func newState(o Options, transport, endpoint string) *state {
	return &state{h: Health{Transport: transport, Endpoint: endpoint},
		log: o.Logger.With("transport", transport, "endpoint", endpoint), logEvery: o.LogEvery}
}

func (s *state) snapshot() Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.h
}

func (s *state) update(f func(h *Health)) {
	s.mu.Lock()
	f(&s.h)
	s.mu.Unlock()
}

func (s *state) connected(now time.Time) {
	s.update(func(h *Health) { h.Connected, h.ConnectedAt = true, now })
	s.log.Info("kv events: subscribed")
}

func (s *state) disconnected(err error) {
	s.update(func(h *Health) {
		h.Connected = false
		h.Reconnects++
		h.LastError = err.Error()
	})
	s.log.Warn("kv events: stream lost, resubscribing", "err", err)
}

func (s *state) dialFailed(err error) {
	s.update(func(h *Health) { h.DialFailures++; h.LastError = err.Error() })
}

// applied records an applied batch arriving at now.
func (s *state) applied(seq uint64, ts float64, now time.Time) {
	s.update(func(h *Health) {
		h.HasSeq, h.LastSeq = true, seq
		h.Batches++
		h.LastBatchAt = now
		h.Lag = 0
		if ts > 0 {
			h.Lag = now.Sub(time.Unix(0, int64(ts*1e9)))
		}
	})
}

// decodeError counts a bad message and logs at most one line per logEvery.
func (s *state) decodeError(err error, now time.Time) {
	s.mu.Lock()
	s.h.DecodeErrors++
	s.h.LastError = err.Error()
	if !s.lastLog.IsZero() && now.Sub(s.lastLog) < s.logEvery {
		s.suppressed++
		s.mu.Unlock()
		return
	}
	s.lastLog = now
	n := s.suppressed
	s.suppressed = 0
	total := s.h.DecodeErrors
	s.mu.Unlock()
	s.log.Warn("kv events: undecodable message dropped", "err", err, "suppressed_since_last_log", n, "decode_errors", total)
}
