package fleetbench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Result is one request as the client saw it. Durations are wall clock, measured from the
// moment the request was sent: its arrival time, or the end of the request it follows
// (Request.After) when that came later.
type Result struct {
	// Index is the request's index in the workload; Replica the gateway it was sent to.
	Index, Replica int
	// Sent is when the request was sent, relative to the start of the run.
	Sent time.Duration
	// TTFT is until the first chunk carrying content; E2E until the stream's [DONE].
	TTFT, E2E time.Duration
	// OutputTokens is usage.completion_tokens of the stream (the content chunks when the
	// stream carried no usage).
	OutputTokens int
	// Err is why the request failed, "" for success (2xx and a complete stream).
	Err string
}

// DriveOptions bound one run.
type DriveOptions struct {
	// Duration is the most time spent sending requests (arrivals later are not sent).
	Duration time.Duration
	// RequestTimeout bounds each request (default 120 s).
	RequestTimeout time.Duration
	// Model is the "model" field (default "sim-model").
	Model string
	// Client sends the requests (default: a keep-alive loopback client).
	Client *http.Client
}

// Drive sends reqs open-loop: request i at arrivals[i] (from the start) or when the request
// it follows ended, whichever is later, to gateway urls[i mod len(urls)] (round-robin, as a
// load balancer in front of the replicas), and waits for every response. It stops sending at
// o.Duration or when ctx ends. It returns the sent requests' results in index order and the
// time from the start to the last response. Errors: mismatched inputs, no gateway.
func Drive(ctx context.Context, urls []string, reqs []Request, arrivals []time.Duration, o DriveOptions) ([]Result, time.Duration, error) {
	if len(urls) == 0 || len(arrivals) < len(reqs) {
		return nil, 0, fmt.Errorf("fleetbench: drive needs a gateway and an arrival per request (%d gateways, %d arrivals, %d requests)", len(urls), len(arrivals), len(reqs))
	}
	if o.Duration <= 0 {
		return nil, 0, errors.New("fleetbench: drive needs a duration > 0")
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 120 * time.Second
	}
	if o.Model == "" {
		o.Model = "sim-model"
	}
	hc := o.Client
	if hc == nil {
		hc = newClient()
	}
	done := make([]chan struct{}, len(reqs))
	results := make([]*Result, len(reqs))
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		last time.Duration
	)
	t0 := time.Now()
	timer := time.NewTimer(0)
	<-timer.C
	defer timer.Stop()
send:
	for i, rq := range reqs {
		if arrivals[i] >= o.Duration {
			break
		}
		if d := time.Until(t0.Add(arrivals[i])); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
				break send
			}
		}
		done[i] = make(chan struct{})
		res := &Result{Index: i, Replica: i % len(urls)}
		results[i] = res
		wg.Go(func() {
			defer close(done[i])
			if a := rq.After; a >= 0 && a < i && done[a] != nil {
				select {
				case <-done[a]:
				case <-ctx.Done():
					res.Err = ctx.Err().Error()
					return
				}
			}
			rctx, cancel := context.WithTimeout(ctx, o.RequestTimeout)
			defer cancel()
			start := time.Now()
			res.Sent = start.Sub(t0)
			res.TTFT, res.OutputTokens, res.Err = streamChat(rctx, hc, urls[res.Replica], o.Model, rq, start)
			end := time.Now()
			res.E2E = end.Sub(start)
			mu.Lock()
			last = max(last, end.Sub(t0))
			mu.Unlock()
		})
	}
	wg.Wait()
	var out []Result
	for _, r := range results {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, last, nil
}

// newClient is a keep-alive client for loopback load: many idle connections per host, no
// compression, no proxy; requests are bounded by their context.
func newClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		MaxIdleConnsPerHost: 512,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}}
}
