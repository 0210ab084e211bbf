package load

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// HoldOptions bound an open-streams run (HoldStreams).
type HoldOptions struct {
	// N is the number of SSE streams to open and hold (>= 1).
	N int
	// OpenConcurrency is how many streams are being opened at once (default 200): a stream
	// counts as open when its first chunk arrived.
	OpenConcurrency int
	// Hold is how long every stream stays open before the gateway's memory is read
	// (default 2 s).
	Hold time.Duration
	// Timeout bounds the whole run (default 120 s). The workload's streams must last longer
	// than that (slow decode ITL, many tokens): the run closes them itself.
	Timeout time.Duration
	// Workload is sent to the gateway; Stream is forced on.
	Workload Workload
}

// memReadTimeout bounds one read of the gateway's /metrics.
const memReadTimeout = 10 * time.Second

// GatewayMem is a snapshot of the gateway's memory from its /metrics (the Prometheus Go and
// process collectors): resident set, heap in use and goroutine stacks in bytes, goroutines.
type GatewayMem struct {
	RSS, HeapInuse, StackInuse int64
	Goroutines                 int64
}

// HoldResult is the outcome of HoldStreams.
type HoldResult struct {
	// Requested streams, Opened (first chunk received) and Failed (error before the first
	// chunk); FirstError is the first failure.
	Requested, Opened, Failed int
	FirstError                string
	// StillOpen is how many streams were still open when the gateway's memory was read.
	StillOpen int
	// OpenTime is how long opening took.
	OpenTime time.Duration
	// Base is before any stream, Held with every stream open, After once they were closed.
	Base, Held, After GatewayMem
}

// PerStream is (Held − Base) ÷ Opened for each field, in bytes (goroutines for Goroutines).
func (r HoldResult) PerStream() (rss, heap, stack, goroutines float64) {
	if r.Opened == 0 {
		return 0, 0, 0, 0
	}
	n := float64(r.Opened)
	return float64(r.Held.RSS-r.Base.RSS) / n, float64(r.Held.HeapInuse-r.Base.HeapInuse) / n,
		float64(r.Held.StackInuse-r.Base.StackInuse) / n, float64(r.Held.Goroutines-r.Base.Goroutines) / n
}

// HoldStreams opens o.N concurrent SSE streams through the gateway at gatewayURL, holds them
// all open for o.Hold, reads the gateway's memory, then closes them and reads it again.
// Bounded by o.Timeout. Errors: a non-loopback URL, an unreadable /metrics; failed streams
// are counted, not errors.
func HoldStreams(ctx context.Context, gatewayURL string, o HoldOptions) (HoldResult, error) {
	if err := CheckLoopback(gatewayURL); err != nil {
		return HoldResult{}, err
	}
	if o.N < 1 {
		return HoldResult{}, fmt.Errorf("load: streams must be >= 1, got %d", o.N)
	}
	if o.OpenConcurrency < 1 {
		o.OpenConcurrency = 200
	}
	if o.Hold <= 0 {
		o.Hold = 2 * time.Second
	}
	if o.Timeout <= 0 {
		o.Timeout = 120 * time.Second
	}
	o.Workload.Stream = true
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	res := HoldResult{Requested: o.N}
	hc := NewClient(o.OpenConcurrency)
	defer hc.CloseIdleConnections()
	// The memory reads get their own bound, so a run whose opening hit o.Timeout still
	// measures what it holds.
	readMem := func() (GatewayMem, error) {
		mctx, mcancel := context.WithTimeout(parent, memReadTimeout)
		defer mcancel()
		return ReadGatewayMem(mctx, hc, gatewayURL)
	}
	var err error
	if res.Base, err = readMem(); err != nil {
		return res, err
	}

	sctx, closeStreams := context.WithCancel(ctx)
	defer closeStreams()
	body, url := o.Workload.Body(), gatewayURL+o.Workload.path()
	sem := make(chan struct{}, o.OpenConcurrency)
	var opened, failed, alive atomic.Int64
	var errOnce sync.Once
	var wg sync.WaitGroup
	t0 := time.Now()
	for range o.N {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			release := sync.OnceFunc(func() { <-sem })
			defer release()
			fail := func(e error) {
				failed.Add(1)
				errOnce.Do(func() { res.FirstError = e.Error() })
			}
			resp, err := post(sctx, hc, url, body, "")
			if err != nil {
				fail(err)
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				fail(statusError("gateway", resp))
				return
			}
			buf := make([]byte, 512)
			first := true
			for {
				n, err := resp.Body.Read(buf)
				if n > 0 && first {
					first = false
					opened.Add(1)
					alive.Add(1)
					defer alive.Add(-1)
					release()
				}
				if err != nil {
					if first {
						fail(fmt.Errorf("stream ended before its first chunk: %w", err))
					}
					return
				}
			}
		})
	}
	// Every stream is open (or failed) once all open slots are free again.
	for range o.OpenConcurrency {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
	}
	res.OpenTime = time.Since(t0)
	select {
	case <-time.After(o.Hold):
	case <-ctx.Done():
	}
	res.Opened, res.Failed, res.StillOpen = int(opened.Load()), int(failed.Load()), int(alive.Load())
	res.Held, err = readMem()
	closeStreams()
	wg.Wait()
	if err != nil {
		return res, err
	}
	// Give the gateway a moment to see the closed connections and end its legs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		res.After, err = readMem()
		if err != nil || res.After.Goroutines < res.Base.Goroutines+50 || time.Now().After(deadline) {
			return res, err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ReadGatewayMem reads process_resident_memory_bytes, go_memstats_heap_inuse_bytes,
// go_memstats_stack_inuse_bytes and go_goroutines from the gateway's /metrics.
func ReadGatewayMem(ctx context.Context, hc *http.Client, gatewayURL string) (GatewayMem, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gatewayURL+"/metrics", nil)
	if err != nil {
		return GatewayMem{}, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return GatewayMem{}, fmt.Errorf("read gateway /metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return GatewayMem{}, fmt.Errorf("read gateway /metrics: HTTP %d", resp.StatusCode)
	}
	var m GatewayMem
	found := 0
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			continue
		}
		var dst *int64
		switch name {
		case "process_resident_memory_bytes":
			dst = &m.RSS
		case "go_memstats_heap_inuse_bytes":
			dst = &m.HeapInuse
		case "go_memstats_stack_inuse_bytes":
			dst = &m.StackInuse
		case "go_goroutines":
			dst = &m.Goroutines
		default:
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			return m, fmt.Errorf("gateway /metrics: %s: %w", name, err)
		}
		*dst = int64(f)
		found++
	}
	if err := sc.Err(); err != nil {
		return m, fmt.Errorf("read gateway /metrics: %w", err)
	}
	if found < 4 {
		return m, fmt.Errorf("gateway /metrics lacks the Go/process collector series (found %d of 4)", found)
	}
	return m, nil
}
