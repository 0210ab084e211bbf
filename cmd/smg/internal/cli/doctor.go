package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/app/health"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

// doctorWorker is the part of a GET /workers entry (adapters/api WorkerInfo) the doctor reads.
type doctorWorker struct {
	ID             string            `json:"id"`
	URL            string            `json:"url"`
	ModelID        string            `json:"model_id"`
	WorkerType     string            `json:"worker_type"`
	ConnectionMode string            `json:"connection_mode"`
	RuntimeType    string            `json:"runtime_type"`
	Labels         map[string]string `json:"labels"`
	BootstrapPort  *int              `json:"bootstrap_port"`
	KVConnector    string            `json:"kv_connector"`
	KVRole         string            `json:"kv_role"`
	KVEngineID     string            `json:"kv_engine_id"`
	Status         string            `json:"status"`
	Queued         int64             `json:"queued"`
	// KVEvents is present when the gateway runs --kv-events-routing.
	KVEvents *struct {
		State   string `json:"state"`
		Routing string `json:"routing"`
		Reason  string `json:"reason"`
	} `json:"kv_events"`
	DPRank *int `json:"dp_rank"`
}

// doctorReport is the --json output.
type doctorReport struct {
	Gateway  string           `json:"gateway"`
	Mode     string           `json:"pd_pairing_mode"`
	Workers  int              `json:"workers"`
	Queued   int64            `json:"queued"`  // requests queued for decode slots on the replica asked
	Tenants  int              `json:"tenants"` // tenants GET /tenants listed (0: none, or an older gateway)
	OK       bool             `json:"ok"`
	Findings []doctor.Finding `json:"findings"`
}

// newDoctor is `smg doctor`: ask a running gateway for its workers and explain each reason a
// request would be served badly (app/doctor). Exit 0 when no error was found (warnings
// allowed), 1 when at least one was (or the gateway could not be asked), 2 for a bad flag.
func newDoctor(env Env, stdout io.Writer) *cobra.Command {
	var (
		target, mode, adminKey string
		asJSON, probe          bool
		noHealth               bool
		maxPairs               int
		timeout, pairTimeout   time.Duration
		healthEndpoint         string
		healthTimeoutSecs      int
	)
	cmd := &cobra.Command{
		Use:   "doctor [--url http://gateway:30000] [--json]",
		Short: "Explain, before traffic, why a running gateway's fleet would serve requests badly (exit 1 if so)",
		Long: "Read a running gateway's workers (GET /workers) and report: prefill or decode legs that pair with no " +
			"worker of the other role and the components that differ, vLLM workers without a KV connector " +
			"(passthrough: decode recomputes every prompt), Mooncake prefills without kv_engine_id, SGLang prefills " +
			"without a bootstrap port or whose bootstrap port does not accept connections, workers that are not ready, " +
			"a role with no worker, and (probing each worker's health endpoint or gRPC HealthCheck itself, all at once) " +
			"workers that fail a health probe now; then (GET /tenants) tenants at 80 % of a limit or more. With --probe-requests, also one " +
			"request through each compatible prefill/decode pair (POST /workers/probe-pair, at most --probe-max-pairs): the pairs whose " +
			"decode recomputes the prompt (pair_recomputes), whose probe failed, or whose decode reports no cached tokens. Exit 1 when any error is found.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyEnv(cmd.Flags(), env); err != nil {
				return err
			}
			m, err := pairing.ParseMode(mode)
			if err != nil {
				return usagef("invalid value %q for --pd-pairing-mode: expected off, lenient or strict", mode)
			}
			if timeout <= 0 {
				return usagef("invalid value %q for --timeout: must be positive", timeout)
			}
			if pairTimeout <= 0 {
				return usagef("invalid value %q for --probe-timeout: must be positive", pairTimeout)
			}
			if maxPairs < 1 {
				return usagef("invalid value %d for --probe-max-pairs: must be at least 1", maxPairs)
			}
			if healthTimeoutSecs <= 0 {
				return usagef("invalid value %d for --health-check-timeout-secs: must be positive", healthTimeoutSecs)
			}
			if !strings.HasPrefix(healthEndpoint, "/") {
				return usagef("invalid value %q for --health-check-endpoint: must start with /", healthEndpoint)
			}
			base := strings.TrimRight(target, "/")
			if base == "" {
				u, err := probeURL("", probeDefaultPort, false, "/", env)
				if err != nil {
					return err
				}
				base = strings.TrimRight(u, "/")
			} else if !strings.HasPrefix(base, "http://") && !strings.HasPrefix(base, "https://") {
				return usagef("invalid value %q for --url: expected http://host:port", target)
			}
			ws, err := fetchWorkers(cmd.Context(), base, adminKey, timeout)
			if err != nil {
				if asJSON { // a JSON consumer gets a report, not empty input
					writeDoctorJSON(stdout, doctorReport{Gateway: base, Mode: string(m), Findings: []doctor.Finding{{
						Kind: KindGatewayUnreachable, Severity: doctor.SeverityError, Message: err.Error()}}})
				}
				return &runError{err}
			}
			var health func(context.Context, worker.Worker) error
			if !noHealth {
				pool := grpcengine.New(grpcengine.Options{})
				defer func() { _ = pool.Close() }()
				health = healthProber(pool, healthEndpoint)
			}
			ps := doctorProbes{timeout: timeout, healthTimeout: time.Duration(healthTimeoutSecs) * time.Second, nixl: probe, health: health}
			if probe {
				ps.pair, ps.maxPairs, ps.pairTimeout = pairProber(base, adminKey), maxPairs, pairTimeout
			}
			rep := runDoctor(cmd.Context(), base, m, ws, ps)
			var tf []doctor.Finding
			rep.Tenants, tf = tenantFindings(cmd.Context(), base, adminKey, timeout)
			rep.Findings = append(rep.Findings, tf...)
			if asJSON {
				writeDoctorJSON(stdout, rep)
			} else {
				printDoctor(stdout, rep)
			}
			if !rep.OK {
				return &runError{errors.New("doctor: problems found (see above)")}
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "url", "", "gateway base `url` (default http://127.0.0.1:<PORT, else SMG_PORT, else 30000>)")
	f.StringVar(&mode, "pd-pairing-mode", string(pairing.ModeLenient), "the gateway's --pd-pairing-mode: off, lenient or strict")
	f.StringVar(&adminKey, "admin-api-key", "", "admin API key sent as a Bearer token to GET /workers and GET /tenants (env SMG_ADMIN_API_KEY)")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&probe, "probe-requests", false, "send one 1-token prefill request to each vLLM NIXL prefill and check it returns kv_transfer_params (contacts the workers directly); "+
		"and run one request through each compatible prefill/decode pair (POST /workers/probe-pair on the gateway) to name the pairs whose decode recomputes the prompt")
	f.DurationVar(&pairTimeout, "probe-timeout", 30*time.Second, "with --probe-requests: bound on each pair probe (longer than the gateway's stall bound, so a hung leg comes back as the gateway's 504, not as a probe that could not run)")
	f.IntVar(&maxPairs, "probe-max-pairs", doctor.DefaultMaxPairs, "with --probe-requests: probe at most this many prefill/decode pairs (4 at once); the rest get a pairs_not_probed note")
	f.DurationVar(&timeout, "timeout", 5*time.Second, "bound for the gateway request, each bootstrap-port dial and each --probe-requests request")
	f.StringVar(&healthEndpoint, "health-check-endpoint", "/health", "the gateway's --health-check-endpoint: the path probed on each HTTP worker")
	f.IntVar(&healthTimeoutSecs, "health-check-timeout-secs", 5, "the gateway's --health-check-timeout-secs: bound for each worker's health probe (all workers are probed at once)")
	f.BoolVar(&noHealth, "no-health-probe", false, "do not probe each worker's health directly (rely on the gateway's last view, the status in GET /workers)")
	return cmd
}

// fetchWorkers GETs base/workers.
func fetchWorkers(ctx context.Context, base, adminKey string, timeout time.Duration) ([]doctorWorker, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/workers", nil)
	if err != nil {
		return nil, fmt.Errorf("doctor: %w", err)
	}
	if adminKey != "" {
		req.Header.Set("Authorization", "Bearer "+adminKey)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("doctor: GET %s/workers: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("doctor: GET %s/workers: %w", base, err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("doctor: GET %s/workers: status %d: %s", base, resp.StatusCode, oneLine(string(body[:min(len(body), 300)])))
	}
	var l struct {
		Workers []doctorWorker `json:"workers"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("doctor: GET %s/workers: not a worker list: %w", base, err)
	}
	return l.Workers, nil
}

// doctorProbes are the contacts the doctor makes itself: bound for dials and NIXL probes,
// whether to send NIXL probes, and the health probe with its bound (nil: none).
type doctorProbes struct {
	timeout, healthTimeout time.Duration
	nixl                   bool
	health                 func(context.Context, worker.Worker) error
	// pair probes a pair through the gateway (nil: none), at most maxPairs of them.
	pair        func(context.Context, worker.Worker, worker.Worker) (doctor.PairProbe, error)
	maxPairs    int
	pairTimeout time.Duration
}

// anyEvents reports whether some listed worker is routed by its KV events: then a worker
// without a subscription is a gap in a mixed fleet worth a note. A fleet where none has
// one (the default for engines that publish nothing) gets notes only for subscriptions
// that do not deliver.
func anyEvents(ds []doctorWorker) bool {
	for _, d := range ds {
		if d.KVEvents != nil && d.KVEvents.Routing == "events" {
			return true
		}
	}
	return false
}

// runDoctor converts the listing and runs the checks.
// KindGatewayUnreachable is the one finding of a --json report when the gateway's worker
// list could not be read (refused, timed out, 401 without the admin key, bad answer).
const KindGatewayUnreachable = "gateway_unreachable"

// writeDoctorJSON prints rep as indented JSON (the --json output).
func writeDoctorJSON(w io.Writer, rep doctorReport) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(rep)
}

func runDoctor(ctx context.Context, base string, m pairing.Mode, ds []doctorWorker, p doctorProbes) doctorReport {
	ws := make([]worker.Worker, 0, len(ds))
	var notReady []doctor.Finding
	var queued int64
	for _, d := range ds {
		w := worker.Worker{ID: d.ID, URL: d.URL, Role: worker.Role(d.WorkerType), Runtime: worker.Runtime(d.RuntimeType),
			Mode: worker.ConnectionMode(d.ConnectionMode), Labels: d.Labels, BootstrapPort: d.BootstrapPort,
			KVConnector: d.KVConnector, KVRole: d.KVRole, KVEngineID: d.KVEngineID, DPRank: d.DPRank}
		if d.ModelID != "" {
			w.Models = []string{d.ModelID}
		}
		ws = append(ws, w)
		if d.Status != "" && d.Status != string(worker.StatusReady) {
			notReady = append(notReady, doctor.NotReady(w, d.Status))
		}
		if d.Queued > 0 {
			queued += d.Queued
			notReady = append(notReady, doctor.QueueBacklog(d.ID, d.URL, d.Queued))
		}
		if k := d.KVEvents; k != nil && k.Routing == "approximate" && w.Role != worker.RoleEncode && (k.State != "none" || anyEvents(ds)) {
			notReady = append(notReady, doctor.KVEventsApproximate(w, k.State, k.Reason))
		}
	}
	o := doctor.Options{Mode: m, Timeout: p.timeout, Draining: map[string]bool{}}
	for _, d := range ds {
		if d.Status == string(worker.StatusDraining) {
			o.Draining[d.ID] = true
		}
	}
	if p.nixl {
		o.ProbeNixl = probeNixl
	}
	o.ProbeHealth, o.HealthTimeout = p.health, p.healthTimeout
	o.ProbePair, o.MaxPairs, o.PairTimeout = p.pair, p.maxPairs, p.pairTimeout
	fs := append(doctor.Check(ctx, ws, o), notReady...)
	ok := true
	for _, f := range fs {
		if f.Severity == doctor.SeverityError {
			ok = false
		}
	}
	if fs == nil {
		fs = []doctor.Finding{}
	}
	return doctorReport{Gateway: base, Mode: m.String(), Workers: len(ws), Queued: queued, OK: ok, Findings: fs}
}

func printDoctor(w io.Writer, r doctorReport) {
	tenants := ""
	if r.Tenants > 0 {
		tenants = fmt.Sprintf(", %d tenants", r.Tenants)
	}
	fmt.Fprintf(w, "smg doctor: %s, %d workers, --pd-pairing-mode %s, %d requests queued for decode slots%s\n", r.Gateway, r.Workers, r.Mode, r.Queued, tenants)
	for _, f := range r.Findings {
		who := f.Role
		if f.Tenant != "" {
			who = "tenant " + f.Tenant
		} else if f.PrefillID != "" {
			who = "pair" // the message names both workers
		} else if f.WorkerID != "" {
			who = fmt.Sprintf("%s %s (%s)", f.Role, f.WorkerID, f.URL)
		}
		fmt.Fprintf(w, "%-7s %s [%s]: %s\n", strings.ToUpper(f.Severity), who, f.Kind, f.Message)
	}
	if r.OK {
		fmt.Fprintln(w, "ok: no reason for bad service found")
	}
}

// probeNixl POSTs a one-token /v1/completions to w tagged as the gateway tags NIXL prefills
// (kv_transfer_params {"do_remote_decode":true,"do_remote_prefill":false}; seed "Connector
// Modes") and reports whether the 200 answer carries non-null kv_transfer_params.
func probeNixl(ctx context.Context, w worker.Worker) (bool, error) {
	model := "default"
	if len(w.Models) > 0 {
		model = w.Models[0]
	}
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": "smg doctor probe", "max_tokens": 1, "stream": false,
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.BaseURL()+"/v1/completions", strings.NewReader(string(body)))
	if err != nil {
		return false, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Request-Id", "smg-doctor-probe")
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, err
	}
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("status %d: %s", resp.StatusCode, oneLine(string(b[:min(len(b), 200)])))
	}
	var v struct {
		KVTransferParams json.RawMessage `json:"kv_transfer_params"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return false, fmt.Errorf("answer is not JSON: %w", err)
	}
	return len(v.KVTransferParams) > 0 && string(v.KVTransferParams) != "null", nil
}

// healthProber probes a worker as the gateway's health checker does: GET <url><endpoint> for
// HTTP workers (app/health.Probe), the runtime's HealthCheck RPC for grpc:// ones; bounded by
// the context the doctor gives it. A ZMQ worker is not probed (nil): the gateway has no ZMQ
// health probe either.
func healthProber(pool *grpcengine.Pool, endpoint string) func(context.Context, worker.Worker) error {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	return func(ctx context.Context, w worker.Worker) error {
		if w.Mode == worker.ConnZMQ {
			return nil
		}
		if isGRPCWorker(w) {
			return pool.HealthCheck(ctx, w)
		}
		return health.Probe(ctx, client, w, endpoint, 0)
	}
}

// isGRPCWorker reports a grpc:// or grpcs:// worker (by connection mode, else by scheme).
func isGRPCWorker(w worker.Worker) bool {
	if w.Mode == worker.ConnGRPC {
		return true
	}
	m, err := worker.ValidateURL(w.URL)
	return err == nil && m == worker.ConnGRPC
}
