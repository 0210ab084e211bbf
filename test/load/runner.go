// Package load is smg's bounded load generator for loopback targets (issue #10): it sends
// PD requests at a fixed concurrency or rate, through the gateway or through a direct
// client that performs the SGLang or vLLM NIXL handoff itself, and reports throughput,
// p50/p90/p99 latency, streaming time-to-first-token and inter-chunk gaps. Compare runs
// the two modes alternately (A B A B …) and gives the ratio per pair and the median ratio.
// Every phase is bounded by a request count AND a time limit; only loopback URLs are
// accepted. Fleet starts smg-sim and smg processes for a comparison.
package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Options bound and shape one load phase.
type Options struct {
	// Concurrency is the number of requests in flight (closed loop: each worker sends its
	// next request when the previous one ended). With Rate it caps the requests in flight.
	Concurrency int
	// Rate, when > 0, sends requests open-loop at this many per second; a request's clock
	// starts at its scheduled time, so queueing behind the Concurrency cap counts.
	Rate float64
	// Requests is the most requests the phase sends (required, > 0).
	Requests int
	// Duration is the most time the phase spends starting requests (required, > 0); the
	// requests in flight then finish, within Grace.
	Duration time.Duration
	// Grace bounds how long requests in flight may take after Duration before they are
	// cancelled (a hang guard; default 30 s).
	Grace time.Duration
}

// validate checks the bounds.
func (o Options) validate() error {
	switch {
	case o.Concurrency < 1:
		return fmt.Errorf("load: concurrency must be >= 1, got %d", o.Concurrency)
	case o.Requests < 1:
		return fmt.Errorf("load: a phase needs a request count >= 1, got %d", o.Requests)
	case o.Duration <= 0:
		return fmt.Errorf("load: a phase needs a time limit > 0, got %s", o.Duration)
	case o.Rate < 0:
		return fmt.Errorf("load: rate must be >= 0, got %g", o.Rate)
	}
	return nil
}

// Run runs one bounded phase against t and summarises it. It stops starting requests after
// o.Requests requests or o.Duration, whichever comes first, or when ctx ends; requests in
// flight then finish (cancelled o.Grace after o.Duration). Errors: invalid options, or ctx
// ended before the phase did (the partial summary is still returned).
func Run(ctx context.Context, t Target, o Options) (Summary, error) {
	if err := o.validate(); err != nil {
		return Summary{}, err
	}
	if o.Grace <= 0 {
		o.Grace = 30 * time.Second
	}
	rctx, cancel := context.WithTimeout(ctx, o.Duration+o.Grace)
	defer cancel()
	workers := make([]*Worker, o.Concurrency)
	recs := make([]*recorder, o.Concurrency)
	for i := range workers {
		workers[i] = newWorker(i)
		recs[i] = workers[i].rec
	}
	t0 := time.Now()
	deadline := t0.Add(o.Duration)
	if o.Rate > 0 {
		openLoop(rctx, ctx, t, o, workers, t0, deadline)
	} else {
		closedLoop(rctx, ctx, t, o, workers, deadline)
	}
	s := merge(t.Name(), recs, time.Since(t0))
	if err := ctx.Err(); err != nil {
		return s, err
	}
	return s, nil
}

// closedLoop runs o.Concurrency workers that each send back-to-back.
func closedLoop(rctx, stop context.Context, t Target, o Options, workers []*Worker, deadline time.Time) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, w := range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(o.Requests) && time.Now().Before(deadline) && stop.Err() == nil {
				s, err := t.Do(rctx, time.Now(), w)
				w.rec.add(s, err)
			}
		})
	}
	wg.Wait()
}

// openLoop sends request i at t0 + i/rate, each on a free worker (at most o.Concurrency in
// flight).
func openLoop(rctx, stop context.Context, t Target, o Options, workers []*Worker, t0, deadline time.Time) {
	free := make(chan *Worker, len(workers))
	for _, w := range workers {
		free <- w
	}
	interval := time.Duration(float64(time.Second) / o.Rate)
	var wg sync.WaitGroup
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
loop:
	for i := 0; i < o.Requests; i++ {
		at := t0.Add(time.Duration(i) * interval)
		if !at.Before(deadline) {
			break
		}
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-stop.Done():
				break loop
			}
		}
		var w *Worker
		select {
		case w = <-free:
		case <-stop.Done():
			break loop
		}
		wg.Go(func() {
			s, err := t.Do(rctx, at, w)
			w.rec.add(s, err)
			free <- w
		})
	}
	wg.Wait()
}

// ErrFailed reports a phase in which some requests failed (see Summary.FirstError).
var ErrFailed = errors.New("load: requests failed")
