package fleet

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Shot is one request of a Load run: when it started, how long it took, its status (0 for
// a transport error) and its body.
type Shot struct {
	Start   time.Time
	Elapsed time.Duration
	Status  int
	Body    []byte
	Err     error
}

// Load runs clients concurrent client loops, each POSTing body(client, i) to path one
// request after another, until ctx ends or the run has lasted dur (a request in flight then
// is finished, bounded by ctx). It returns every request in start order. Safe to call from
// a test goroutine only (it waits for its clients).
func (g *Gateway) Load(ctx context.Context, clients int, dur time.Duration, path string, body func(client, i int) []byte) []Shot {
	stop := time.Now().Add(dur)
	var mu sync.Mutex
	var shots []Shot
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(stop) && ctx.Err() == nil; i++ {
				s := Shot{Start: time.Now()}
				r, err := g.Send(ctx, path, body(c, i), nil)
				s.Elapsed, s.Err = time.Since(s.Start), err
				if r != nil {
					s.Status, s.Body = r.Status, r.Body
				}
				mu.Lock()
				shots = append(shots, s)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(shots, func(i, j int) bool { return shots[i].Start.Before(shots[j].Start) })
	return shots
}

// Median is the median Elapsed of shots (0 for none).
func Median(shots []Shot) time.Duration {
	if len(shots) == 0 {
		return 0
	}
	d := make([]time.Duration, len(shots))
	for i, s := range shots {
		d[i] = s.Elapsed
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}
