package doctor

import (
	"context"
	"fmt"
	"sync"

	"github.com/smg-go/smg/domain/worker"
)

// KindHealthProbeFailed is the finding for a worker that failed the doctor's own health
// probe (Options.ProbeHealth): its role has lost it now, whatever the gateway last saw.
const KindHealthProbeFailed = "worker_health_probe_failed"

// probeHealth probes every worker at once, each bounded by o.HealthTimeout, so the whole check
// takes about one probe timeout. Findings come back in ws's order.
func probeHealth(ctx context.Context, ws []worker.Worker, o Options) []Finding {
	if o.ProbeHealth == nil {
		return nil
	}
	errs := make([]error, len(ws))
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pctx, cancel := context.WithTimeout(ctx, o.HealthTimeout)
			defer cancel()
			errs[i] = o.ProbeHealth(pctx, w)
		}()
	}
	wg.Wait()
	var out []Finding
	for i, w := range ws {
		if errs[i] == nil {
			continue
		}
		out = append(out, Finding{Kind: KindHealthProbeFailed, Severity: SeverityError, WorkerID: w.ID, URL: w.URL, Role: string(w.Role),
			Message: fmt.Sprintf("%s %s failed a health probe from here (%s): its role has lost it, whatever the gateway's last probe saw",
				w.Role, w.ID, oneLine(errs[i]))})
	}
	return out
}
