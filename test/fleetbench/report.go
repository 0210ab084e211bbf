package fleetbench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/smg-go/smg/test/load"
)

// Quantiles are nearest-rank percentiles in milliseconds (load.Quantile), all 0 for no
// samples.
type Quantiles struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// quantiles sorts xs in place and summarises it.
func quantiles(xs []time.Duration) Quantiles {
	if len(xs) == 0 {
		return Quantiles{}
	}
	slices.Sort(xs)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return Quantiles{N: len(xs), P50: ms(load.Quantile(xs, .5)), P90: ms(load.Quantile(xs, .9)),
		P99: ms(load.Quantile(xs, .99)), Max: ms(xs[len(xs)-1])}
}

// Cell is one policy × replica count × workload of a report.
type Cell struct {
	Workload string `json:"workload"`
	Policy   string `json:"policy"`
	Replicas int    `json:"replicas"`
	// Sent requests; OK succeeded; Errors failed (FirstError is the first reason).
	Sent       int    `json:"sent"`
	OK         int    `json:"ok"`
	Errors     int    `json:"errors"`
	FirstError string `json:"first_error,omitempty"`
	// ElapsedS is from the first arrival to the last response, in seconds.
	ElapsedS float64 `json:"elapsed_s"`
	// TTFTms (first content chunk) and E2Ems ([DONE]) over successful requests.
	TTFTms Quantiles `json:"ttft_ms"`
	E2Ems  Quantiles `json:"e2e_ms"`
	// RequestsPerS and OutputTokensPerS are successful requests and their output tokens per
	// second of ElapsedS.
	RequestsPerS     float64 `json:"requests_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	// CacheHitRate is Σ cached_tokens ÷ Σ prompt_tokens over the prefill simulators'
	// /sim/stats; PromptTokens and CachedTokens are those sums.
	CacheHitRate float64 `json:"cache_hit_rate"`
	PromptTokens int64   `json:"prompt_tokens"`
	CachedTokens int64   `json:"cached_tokens"`
	// EvictedBlocks is Σ evicted_blocks over the prefills.
	EvictedBlocks int64 `json:"evicted_blocks"`
	// PrefillImbalance and DecodeImbalance are max ÷ mean busy_ms over each role's workers.
	PrefillImbalance float64 `json:"prefill_imbalance"`
	DecodeImbalance  float64 `json:"decode_imbalance"`
	// Recomputes is Σ recomputed_prompts over the decodes.
	Recomputes int64 `json:"recomputes"`
	// DecodeOnly is Σ decode_only_requests over the decodes: requests served without a
	// prefill leg (selective PD), not counted in Recomputes.
	DecodeOnly int64 `json:"decode_only,omitempty"`
	// CacheModel is false when the simulators report no KV-cache counters (hit rate 0 then
	// means "not measured").
	CacheModel bool `json:"cache_model"`
	// Workers are the simulators' own counters the figures above come from.
	Workers []WorkerStats `json:"workers"`
	// TTFTBySize is the TTFT of successful requests by prompt size, "short" and "long"
	// (SizeSplit); absent from cells built by Summarise alone.
	TTFTBySize map[string]Quantiles `json:"ttft_by_size_ms,omitempty"`
	// TTFTSamples are the successful requests' TTFTs in milliseconds, ascending (the CDF).
	TTFTSamples []float64 `json:"ttft_samples_ms"`
}

// Summarise builds a cell from the client's results, the run's elapsed time and the
// simulators' stats.
func Summarise(workload, policy string, replicas int, rs []Result, elapsed time.Duration, ws []WorkerStats) Cell {
	c := Cell{Workload: workload, Policy: policy, Replicas: replicas, Sent: len(rs), ElapsedS: elapsed.Seconds(),
		Workers: ws, CacheModel: len(ws) > 0}
	var ttft, e2e []time.Duration
	tokens := 0
	for _, r := range rs {
		if r.Err != "" {
			c.Errors++
			if c.FirstError == "" {
				c.FirstError = r.Err
			}
			continue
		}
		c.OK++
		ttft, e2e = append(ttft, r.TTFT), append(e2e, r.E2E)
		tokens += r.OutputTokens
	}
	c.TTFTms, c.E2Ems = quantiles(ttft), quantiles(e2e)
	c.TTFTSamples = make([]float64, len(ttft))
	for i, d := range ttft {
		c.TTFTSamples[i] = float64(d) / float64(time.Millisecond)
	}
	if elapsed > 0 {
		c.RequestsPerS = float64(c.OK) / elapsed.Seconds()
		c.OutputTokensPerS = float64(tokens) / elapsed.Seconds()
	}
	for _, w := range ws {
		c.CacheModel = c.CacheModel && w.CacheModel
		switch w.Role {
		case "prefill":
			c.PromptTokens += w.PromptTokens
			c.CachedTokens += w.CachedTokens
			c.EvictedBlocks += w.EvictedBlocks
		case "decode":
			c.Recomputes += max(w.RecomputedPrompts-w.DecodeOnlyRequests, 0)
			c.DecodeOnly += w.DecodeOnlyRequests
		}
	}
	c.CacheHitRate = HitRate(ws, "prefill")
	c.PrefillImbalance, c.DecodeImbalance = Imbalance(busy(ws, "prefill")), Imbalance(busy(ws, "decode"))
	return c
}

// Report is the outcome of a fleet benchmark run (the --json document).
type Report struct {
	// Started is when the run began (UTC); Machine describes where (CPUs, Go, OS/arch).
	Started time.Time `json:"started"`
	Machine string    `json:"machine"`
	// Setup is the fleet, traffic and workload settings every cell used.
	Setup Setup  `json:"setup"`
	Cells []Cell `json:"cells"`
	// Reusable is each workload's ideal-cache ceiling of the hit rate (Reusable), over the
	// requests a cell sends.
	Reusable map[string]float64 `json:"reusable,omitempty"`
}

// Setup is what every cell of a report shares.
type Setup struct {
	Engine      string   `json:"engine"`
	Transport   string   `json:"transport"`
	Prefills    int      `json:"prefills"`
	Decodes     int      `json:"decodes"`
	Rate        float64  `json:"rate"`
	Requests    int      `json:"requests"`
	DurationS   float64  `json:"duration_s"`
	Seed        uint64   `json:"seed"`
	Sim         SimKnobs `json:"sim"`
	Shape       Shape    `json:"shape"`
	GatewayArgs []string `json:"gateway_args,omitempty"`
}

// WriteJSON writes r, indented, to path.
func WriteJSON(path string, r Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// ReadJSON reads a report WriteJSON wrote.
func ReadJSON(path string) (Report, error) {
	var r Report
	b, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("fleetbench: %s: %w", path, err)
	}
	return r, nil
}

// WriteTable prints one line per cell: workload, policy, replicas, ok/sent, TTFT
// p50/p90/p99 and E2E p50/p99 in ms, req/s, output tok/s, hit rate, prefill and decode
// imbalance, errors, recomputes.
func WriteTable(out io.Writer, cells []Cell) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "workload\tpolicy\trepl\tok/sent\tttft p50\tp90\tp99\te2e p50\tp99\treq/s\tout tok/s\thit rate\timbal P\timbal D\terrors\trecomp\t")
	for _, c := range cells {
		hit := fmt.Sprintf("%.3f", c.CacheHitRate)
		if !c.CacheModel {
			hit = "n/a"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d/%d\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t%.0f\t%s\t%.2f\t%.2f\t%d\t%d\t\n",
			c.Workload, c.Policy, c.Replicas, c.OK, c.Sent, c.TTFTms.P50, c.TTFTms.P90, c.TTFTms.P99,
			c.E2Ems.P50, c.E2Ems.P99, c.RequestsPerS, c.OutputTokensPerS, hit, c.PrefillImbalance,
			c.DecodeImbalance, c.Errors, c.Recomputes)
	}
	_ = tw.Flush()
}
