package text

import (
	"sync"
	"time"
)

// Backoff of a worker whose GetTokenizer bundle failed (fetch, digest, zip bounds or
// tokenizer parse), and of a local tokenizer source that failed to load (a hub id, which
// reads nothing, excepted): it is not tried again for DefaultBundleBackoff, then twice as
// long after each further failure, up to MaxBundleBackoff. A bad bundle or file is so read,
// inflated and parsed at most once per window, however many requests need the model.
const (
	DefaultBundleBackoff = 15 * time.Second
	MaxBundleBackoff     = 10 * time.Minute
)

// bundleFailures is the negative cache of failed tokenizer sources, keyed by worker URL or
// by "path " + local path. Safe for
// concurrent use.
type bundleFailures struct {
	initial, max time.Duration
	now          func() time.Time

	mu sync.Mutex
	m  map[string]bundleFailure
}

type bundleFailure struct {
	err     error
	until   time.Time
	backoff time.Duration
}

func newBundleFailures(initial, maxBackoff time.Duration, now func() time.Time) *bundleFailures {
	if now == nil {
		now = time.Now
	}
	return &bundleFailures{initial: initial, max: maxBackoff, now: now, m: map[string]bundleFailure{}}
}

// blocked returns the remembered failure of worker and how long it stays blocked, while
// its window lasts.
func (b *bundleFailures) blocked(worker string) (bundleFailure, time.Duration, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	f, ok := b.m[worker]
	if !ok {
		return f, 0, false
	}
	left := f.until.Sub(b.now())
	return f, left, left > 0
}

// fail remembers err for worker: the window starts at the initial backoff and doubles on
// every failure after a window passed, up to the maximum.
func (b *bundleFailures) fail(worker string, err error) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	next := b.initial
	if f, ok := b.m[worker]; ok {
		next = min(2*f.backoff, b.max)
	}
	b.m[worker] = bundleFailure{err: err, until: b.now().Add(next), backoff: next}
	return next
}

// succeed forgets worker's failures.
func (b *bundleFailures) succeed(worker string) {
	b.mu.Lock()
	delete(b.m, worker)
	b.mu.Unlock()
}

// SetBundleBackoff sets the first and the largest window during which a worker whose bundle
// failed is not asked again (DefaultBundleBackoff, MaxBundleBackoff), and the clock (nil:
// time.Now). Call it before the first Get.
func (r *Registry) SetBundleBackoff(initial, maxBackoff time.Duration, now func() time.Time) {
	r.failed = newBundleFailures(initial, maxBackoff, now)
}
