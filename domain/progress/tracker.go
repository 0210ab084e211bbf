package progress

import (
	"sync"
	"time"
)

// Settings are a Tracker's stall-bound parameters.
type Settings struct {
	// Floor is the smallest stall bound: a worker whose figures are tiny (or unknown) is
	// still given this long without progress (default 5 s).
	Floor time.Duration
	// Ceiling is the largest stall bound (--stall-timeout-secs, default 30 s): a worker whose
	// figures grew without limit is still suspected after this long.
	Ceiling time.Duration
	// Factor multiplies the slower of the worker's first-token and inter-token averages
	// (default 10).
	Factor float64
}

// DefaultSettings are the documented defaults: floor 5 s, ceiling 30 s, factor 10.
func DefaultSettings() Settings {
	return Settings{Floor: 5 * time.Second, Ceiling: 30 * time.Second, Factor: 10}
}

func (s Settings) normalized() Settings {
	d := DefaultSettings()
	if s.Ceiling <= 0 {
		s.Ceiling = d.Ceiling
	}
	if s.Floor <= 0 {
		s.Floor = d.Floor
	}
	s.Floor = min(s.Floor, s.Ceiling)
	if s.Factor <= 0 {
		s.Factor = d.Factor
	}
	return s
}

// alpha is the weight of a new sample in the first-token and inter-token averages.
const alpha = 0.2

// LegID names one leg in flight on a Tracker.
type LegID uint64

type leg struct {
	start, last time.Time
	events      int  // progress events after the start (a head counts)
	delivered   bool // the leg produced output that may have reached a client
}

// Tracker is one worker's progress record. All methods are safe for concurrent use.
type Tracker struct {
	s Settings

	mu   sync.Mutex
	legs map[LegID]*leg
	next LegID
	// last is the latest progress of any leg of the worker (or a passed canary, or the
	// tracker's creation).
	last      time.Time
	ttft, itl float64 // EWMA, seconds; 0 = no sample yet
}

// NewTracker returns an empty tracker for a worker first seen at now.
func NewTracker(s Settings, now time.Time) *Tracker {
	return &Tracker{s: s.normalized(), legs: map[LegID]*leg{}, last: now}
}

// Begin records a leg dispatched at now and returns its id. A worker that was idle starts
// its silence clock at the leg's start, not at its last output long ago.
func (t *Tracker) Begin(now time.Time) LegID {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	if len(t.legs) == 0 && now.After(t.last) {
		t.last = now
	}
	t.legs[t.next] = &leg{start: now, last: now}
	return t.next
}

// Progress records that leg id made progress at now: a head, a token, a chunk, a handoff
// answer. delivered marks output that may have reached the client (a body byte, a stream
// item); such a leg is never cancelled by the watchdog. The first event after a head that
// delivered output is a first-token sample; later ones inter-token samples.
func (t *Tracker) Progress(id LegID, now time.Time, delivered bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	l, ok := t.legs[id]
	if !ok {
		return
	}
	gap := now.Sub(l.last).Seconds()
	switch {
	case delivered && !l.delivered:
		t.ttft = ewma(t.ttft, now.Sub(l.start).Seconds())
	case delivered:
		t.itl = ewma(t.itl, gap)
	}
	l.events++
	l.delivered = l.delivered || delivered
	l.last = now
	if now.After(t.last) {
		t.last = now
	}
}

// End removes leg id. ok reports that it ended with an answer (a completion, an error
// answer): that is progress of the worker. A leg cancelled or cut counts as none.
func (t *Tracker) End(id LegID, now time.Time, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, found := t.legs[id]; !found {
		return
	}
	delete(t.legs, id)
	if ok && now.After(t.last) {
		t.last = now
	}
}

// Cleared records that the worker proved alive at now (a canary passed): its silence clock
// and every leg's restart there.
func (t *Tracker) Cleared(now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last = now
	for _, l := range t.legs {
		if now.After(l.last) {
			l.last = now
		}
	}
}

// Bound is the worker's stall bound: Factor times the slower of its first-token and
// inter-token averages, clamped to [Floor, Ceiling] (Floor while it has no figures).
func (t *Tracker) Bound() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.bound()
}

func (t *Tracker) bound() time.Duration {
	b := time.Duration(max(t.ttft, t.itl) * t.s.Factor * float64(time.Second))
	return min(max(b, t.s.Floor), t.s.Ceiling)
}

// Suspect reports whether at now the worker has a leg that made no progress for its stall
// bound while none of its legs made any for the bound. An idle worker, or one whose other
// legs produce output, is not suspect.
func (t *Tracker) Suspect(now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.bound()
	if now.Sub(t.last) < b {
		return false
	}
	for _, l := range t.legs {
		if now.Sub(l.last) >= b {
			return true
		}
	}
	return false
}

// Stranded returns the legs in flight that delivered no output: the ones the gateway may
// still cancel and retry elsewhere without the client noticing.
func (t *Tracker) Stranded() []LegID {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []LegID
	for id, l := range t.legs {
		if !l.delivered {
			ids = append(ids, id)
		}
	}
	return ids
}

// InFlight is the number of legs in flight.
func (t *Tracker) InFlight() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.legs)
}

func ewma(avg, sample float64) float64 {
	if avg == 0 {
		return sample
	}
	return avg + alpha*(sample-avg)
}
