package progress_test

import (
	"slices"
	"testing"
	"time"

	"github.com/smg-go/smg/domain/progress"
)

var t0 = time.Unix(1_000_000, 0)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestBoundIsClampedEWMA(t *testing.T) {
	t.Parallel()
	s := progress.Settings{Floor: 2 * time.Second, Ceiling: 20 * time.Second, Factor: 10}
	tr := progress.NewTracker(s, t0)
	if got := tr.Bound(); got != 2*time.Second {
		t.Fatalf("no figures: bound %v, want the floor 2s", got)
	}
	// First token after 0.5 s, then tokens 0.1 s apart: factor × 0.5 s = 5 s.
	id := tr.Begin(at(0))
	tr.Progress(id, at(0.5), true)
	for i := 1; i <= 5; i++ {
		tr.Progress(id, at(0.5+0.1*float64(i)), true)
	}
	if got := tr.Bound(); got != 5*time.Second {
		t.Fatalf("ttft 0.5s: bound %v, want 5s", got)
	}
	// A worker whose first token takes 10 s gets the ceiling.
	id2 := tr.Begin(at(2))
	tr.Progress(id2, at(40), true)
	if got := tr.Bound(); got != 20*time.Second {
		t.Fatalf("slow worker: bound %v, want the ceiling 20s", got)
	}
}

func TestSuspectNeedsASilentLegAndASilentWorker(t *testing.T) {
	t.Parallel()
	s := progress.Settings{Floor: 5 * time.Second, Ceiling: 30 * time.Second, Factor: 10}
	tr := progress.NewTracker(s, t0)
	if tr.Suspect(at(100)) {
		t.Fatal("an idle worker is never suspect")
	}
	stuck := tr.Begin(at(100))
	busy := tr.Begin(at(100))
	for i := 1; i <= 8; i++ { // the other leg streams a token a second
		tr.Progress(busy, at(100+float64(i)), true)
	}
	if tr.Suspect(at(108.5)) {
		t.Fatal("a worker producing output for another leg is not suspect")
	}
	tr.End(busy, at(109), true)
	// The busy leg's first token took 1 s: bound 10 × 1 s = 10 s.
	if tr.Suspect(at(118.9)) {
		t.Fatal("suspect before its bound passed since the worker's last progress")
	}
	if !tr.Suspect(at(119)) {
		t.Fatalf("a leg silent for 19 s and a worker silent for 10 s (bound %v): want suspect", tr.Bound())
	}
	if got := tr.Stranded(); !slices.Equal(got, []progress.LegID{stuck}) {
		t.Fatalf("stranded %v, want [%d]", got, stuck)
	}
	tr.Cleared(at(119))
	if tr.Suspect(at(128)) {
		t.Fatal("a passed canary restarts the silence clock")
	}
	if !tr.Suspect(at(129)) {
		t.Fatal("still silent one bound after the canary: want suspect again")
	}
	tr.End(stuck, at(130), false)
	if tr.Suspect(at(200)) || tr.InFlight() != 0 {
		t.Fatal("no legs left: not suspect")
	}
}

func TestDeliveredLegIsNotStranded(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(progress.DefaultSettings(), t0)
	head := tr.Begin(at(0))
	tr.Progress(head, at(0.1), false) // a head only: nothing reached the client
	out := tr.Begin(at(0))
	tr.Progress(out, at(0.2), true)
	if got := tr.Stranded(); !slices.Equal(got, []progress.LegID{head}) {
		t.Fatalf("stranded %v, want only the head-only leg %d", got, head)
	}
}

func TestIdleWorkerStartsItsClockAtTheNextLeg(t *testing.T) {
	t.Parallel()
	tr := progress.NewTracker(progress.DefaultSettings(), t0)
	tr.Begin(at(1000)) // last progress long ago: the new leg gets a whole bound
	if tr.Suspect(at(1004)) {
		t.Fatal("suspect 4 s after the first leg of an idle worker (floor 5 s)")
	}
	if !tr.Suspect(at(1005)) {
		t.Fatal("want suspect at the floor")
	}
}
