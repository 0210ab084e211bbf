package fleetbench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
)

// TwoTenants is the workload name of the priority benchmark (RunTenants): a saturating batch
// tenant and an interactive tenant of higher priority, each with its own API key from a
// generated --tenants-file, on decode workers gated by an admission window.
const TwoTenants = "two-tenants"

// Tenant modes (TenantCell.Mode), each on a fresh fleet.
const (
	// ModeUnloaded: the interactive tenant alone (its reference TTFT).
	ModeUnloaded = "unloaded"
	// ModeNoQueue: both tenants, --flow-queue-size 0: every dispatch waits for a slot as the
	// seed's --pd-admission-wait-secs says, first come, no priorities.
	ModeNoQueue = "no-queue"
	// ModeEqual: both tenants at priority 0: the queue's fair share only.
	ModeEqual = "equal-priority"
	// ModePriorities: interactive priority 10, batch 0.
	ModePriorities = "priorities"
)

// TenantsConfig is the two-tenant benchmark. Base gives the fleet (BinDir, Engine,
// Transport, Prefills, Decodes, Replicas, Sim, Seed, RequestTimeout, GatewayArgs, Log); its
// Rate, Requests and Shape.MaxTokens are the batch tenant's.
type TenantsConfig struct {
	Base Config
	// DecodeWindow is each decode's max_running_requests label (its admission window).
	DecodeWindow int
	// InteractiveRate (req/s), InteractiveRequests and InteractiveMaxTokens shape the
	// interactive tenant's Poisson stream of short unique prompts.
	InteractiveRate      float64
	InteractiveRequests  int
	InteractiveMaxTokens int
	// QueueWait is --flow-queue-wait-secs (and --pd-admission-wait-secs in ModeNoQueue).
	QueueWait time.Duration
}

// TenantStats is one tenant's side of a cell.
type TenantStats struct {
	Sent   int       `json:"sent"`
	OK     int       `json:"ok"`
	Shed   int       `json:"shed_503"`
	Errors int       `json:"errors"`
	TTFTms Quantiles `json:"ttft_ms"`
}

// TenantCell is one mode × replica count.
type TenantCell struct {
	Mode        string      `json:"mode"`
	Replicas    int         `json:"replicas"`
	Interactive TenantStats `json:"interactive"`
	Batch       TenantStats `json:"batch"`
	ElapsedS    float64     `json:"elapsed_s"`
}

// Tenants' API keys in the generated tenants file.
const (
	keyInteractive = "sk-interactive-bench"
	keyBatch       = "sk-batch-bench"
)

// RunTenants runs every mode for every Base.Replicas count and returns the cells in order.
func RunTenants(ctx context.Context, c TenantsConfig) ([]TenantCell, error) {
	log := c.Base.Log
	if log == nil {
		log = io.Discard
	}
	if c.Base.Requests < 1 || c.InteractiveRequests < 1 || c.Base.Duration <= 0 {
		return nil, fmt.Errorf("fleetbench: %s needs requests for both tenants and a duration", TwoTenants)
	}
	batchShape, intShape := c.Base.Shape, c.Base.Shape
	intShape.MaxTokens = c.InteractiveMaxTokens
	batch, err := Generate(Unique, c.Base.Seed, c.Base.Requests, batchShape)
	if err != nil {
		return nil, err
	}
	inter, err := Generate(Unique, c.Base.Seed+1, c.InteractiveRequests, intShape)
	if err != nil {
		return nil, err
	}
	batchAt, err := Arrivals(c.Base.Seed, c.Base.Rate, c.Base.Requests)
	if err != nil {
		return nil, err
	}
	interAt, err := Arrivals(c.Base.Seed+1, c.InteractiveRate, c.InteractiveRequests)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "smg-bench-tenants-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	var cells []TenantCell
	for _, r := range c.Base.Replicas {
		for _, mode := range []string{ModeUnloaded, ModeNoQueue, ModeEqual, ModePriorities} {
			fmt.Fprintf(log, "cell %s / %s / %d replica(s): starting\n", TwoTenants, mode, r)
			cell, err := runTenantCell(ctx, c, dir, mode, r, inter, interAt, batch, batchAt)
			if err != nil {
				return cells, fmt.Errorf("cell %s / %d replicas: %w", mode, r, err)
			}
			fmt.Fprintf(log, "cell %s / %s / %d replica(s): interactive ttft p99 %.0f ms, batch %d/%d ok\n",
				TwoTenants, mode, r, cell.Interactive.TTFTms.P99, cell.Batch.OK, cell.Batch.Sent)
			cells = append(cells, cell)
		}
	}
	return cells, nil
}

// tenantsFile writes the generated tenants file for mode and returns its path.
func tenantsFile(dir, mode string) (string, error) {
	prio := 10
	if mode == ModeEqual || mode == ModeNoQueue {
		prio = 0
	}
	y := fmt.Sprintf("tenants:\n  - name: interactive\n    priority: %d\n    api_keys: [%s]\n  - name: batch\n    priority: 0\n    api_keys: [%s]\n",
		prio, keyInteractive, keyBatch)
	p := filepath.Join(dir, "tenants-"+mode+".yaml")
	return p, os.WriteFile(p, []byte(y), 0o600)
}

func runTenantCell(ctx context.Context, c TenantsConfig, dir, mode string, replicas int,
	inter []Request, interAt []time.Duration, batch []Request, batchAt []time.Duration) (TenantCell, error) {
	tf, err := tenantsFile(dir, mode)
	if err != nil {
		return TenantCell{}, err
	}
	wait := fmt.Sprintf("%g", c.QueueWait.Seconds())
	args := append([]string{"--tenants-file", tf, "--flow-queue-wait-secs", wait, "--pd-admission-wait-secs", wait}, c.Base.GatewayArgs...)
	if mode == ModeNoQueue {
		args = append(args, "--flow-queue-size", "0")
	}
	b := c.Base
	pol := "round_robin"
	if len(b.Policies) > 0 {
		pol = b.Policies[0]
	}
	f, err := StartFleet(ctx, FleetSpec{BinDir: b.BinDir, Engine: b.Engine, Transport: b.Transport, TokenizerPath: b.TokenizerPath,
		Prefills: b.Prefills, Decodes: b.Decodes, Replicas: replicas, Policy: pol, Sim: b.Sim, GatewayArgs: args,
		PrefillArgs: b.PrefillArgs, DecodeArgs: b.DecodeArgs, DecodeWindow: c.DecodeWindow})
	if err != nil {
		return TenantCell{}, err
	}
	defer f.Close()
	opts := func(key string) DriveOptions {
		return DriveOptions{Duration: b.Duration, RequestTimeout: b.RequestTimeout, Client: keyClient(key)}
	}
	start := time.Now()
	var (
		wg             sync.WaitGroup
		ir, br         []Result
		interErr, bErr error
	)
	wg.Go(func() { ir, _, interErr = Drive(ctx, f.GatewayURLs, inter, interAt, opts(keyInteractive)) })
	if mode != ModeUnloaded {
		wg.Go(func() { br, _, bErr = Drive(ctx, f.GatewayURLs, batch, batchAt, opts(keyBatch)) })
	}
	wg.Wait()
	if err := errorsJoin(interErr, bErr, ctx.Err()); err != nil {
		return TenantCell{}, err
	}
	return TenantCell{Mode: mode, Replicas: replicas, Interactive: tenantStats(ir), Batch: tenantStats(br),
		ElapsedS: time.Since(start).Seconds()}, nil
}

func errorsJoin(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

func tenantStats(rs []Result) TenantStats {
	s := TenantStats{Sent: len(rs)}
	var ttft []time.Duration
	for _, r := range rs {
		switch {
		case r.Err == "":
			s.OK++
			ttft = append(ttft, r.TTFT)
		case strings.HasPrefix(r.Err, "HTTP 503"):
			s.Shed++
		default:
			s.Errors++
		}
	}
	s.TTFTms = quantiles(ttft)
	return s
}

// keyClient is newClient sending key as the Bearer API key of every request.
func keyClient(key string) *http.Client {
	hc := newClient()
	hc.Transport = bearer{key: key, next: hc.Transport}
	return hc
}

type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// WriteTenantsTable prints the cells: per mode, the interactive tenant's TTFT and its ratio
// to the unloaded cell of the same replica count, and the batch tenant's outcomes.
func WriteTenantsTable(out io.Writer, cells []TenantCell) {
	tw := tabwriter.NewWriter(out, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "mode\treplicas\tint ok/sent\tint ttft p50\tp90\tp99\tp99 ÷ unloaded\tbatch ok/sent\tbatch 503\tbatch ttft p50\t")
	base := map[int]float64{}
	for _, c := range cells {
		if c.Mode == ModeUnloaded {
			base[c.Replicas] = c.Interactive.TTFTms.P99
		}
	}
	for _, c := range cells {
		ratio := "-"
		if b := base[c.Replicas]; b > 0 {
			ratio = fmt.Sprintf("%.2f×", c.Interactive.TTFTms.P99/b)
		}
		fmt.Fprintf(tw, "%s\t%d\t%d/%d\t%.0f ms\t%.0f ms\t%.0f ms\t%s\t%d/%d\t%d\t%.0f ms\t\n", c.Mode, c.Replicas,
			c.Interactive.OK, c.Interactive.Sent, c.Interactive.TTFTms.P50, c.Interactive.TTFTms.P90, c.Interactive.TTFTms.P99, ratio,
			c.Batch.OK, c.Batch.Sent, c.Batch.Shed, c.Batch.TTFTms.P50)
	}
	_ = tw.Flush()
}
