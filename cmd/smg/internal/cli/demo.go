package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/app"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/wire"
)

// demoModel is the model id the simulated fleet serves.
const demoModel = "sim-model"

type demoOptions struct {
	engine    string
	host      string
	port      int
	logLevel  string
	sim       string
	transport string // "http" or "grpc"
	// tokenizer is the directory the gRPC simulators serve (GetTokenizer, tokenizer_path).
	tokenizer string
}

// newDemo is `smg demo`: a simulated 2 prefill + 2 decode fleet behind a gateway.
func newDemo(env Env, stdout io.Writer) *cobra.Command {
	o := demoOptions{engine: "sglang", host: "127.0.0.1", port: 30000, logLevel: "warn", transport: "http"}
	cmd := &cobra.Command{
		Use:   "demo [flags]",
		Short: "Run a simulated PD fleet (2 prefill + 2 decode smg-sim workers) behind the gateway",
		Long: `Start 2 prefill and 2 decode smg-sim engine simulators on 127.0.0.1 (free ports),
register them with a gateway on --host:--port and print curl commands to try.
SGLang prefills get a bootstrap port; vLLM workers are registered with the NixlConnector.
No GPU, no Redis, no network. Ctrl-C (or SIGTERM) stops the gateway and every simulator.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case o.transport != "http" && o.transport != "grpc":
				return usagef("invalid value %q for --transport: expected http or grpc", o.transport)
			case o.transport == "grpc" && o.engine != "sglang" && o.engine != "vllm" && o.engine != "tokenspeed":
				return usagef("invalid value %q for --engine: expected sglang, vllm or tokenspeed", o.engine)
			case o.transport == "http" && o.engine == "tokenspeed":
				return usagef("--engine tokenspeed is gRPC-only: add --transport grpc")
			case o.transport == "http" && o.engine != "sglang" && o.engine != "vllm":
				return usagef("invalid value %q for --engine: expected sglang or vllm", o.engine)
			}
			if o.port < 1 || o.port > 65535 {
				return usagef("invalid value for --port: must be between 1 and 65535 (got %d)", o.port)
			}
			return runDemo(cmd.Context(), o, stdout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.engine, "engine", o.engine, "simulated engine: sglang or vllm (gRPC also tokenspeed)")
	f.StringVar(&o.transport, "transport", o.transport, "how the gateway reaches the simulators: http or grpc (gRPC workers register from their server info)")
	f.StringVar(&o.host, "host", o.host, "gateway listen address")
	f.IntVar(&o.port, "port", o.port, "gateway `port`")
	f.StringVar(&o.logLevel, "log-level", o.logLevel, "gateway log level: debug, info, warn or error")
	f.StringVar(&o.sim, "sim", "", "`path` of the smg-sim binary (default: next to smg, then PATH)")
	f.StringVar(&o.tokenizer, "tokenizer-path", "", "gRPC: tokenizer `directory` the simulators serve, so chat and completions work (default: the Qwen3 fixture of `make fixtures`, found in .cache/fixtures/ of the working directory or the smg binary's repository, or any directory above them)")
	return cmd
}

func runDemo(ctx context.Context, o demoOptions, out io.Writer) error {
	bin, err := findSim(o.sim)
	if err != nil {
		return &runError{err}
	}
	start, register, banner := startFleet, registerFleet, printBanner
	if o.transport == "grpc" {
		tok := o.tokenizer
		if tok == "" {
			var searched []string
			if tok, searched = fixtureTokenizer(); tok == "" {
				printNoTokenizer(out, searched)
			}
		}
		start = func(ctx context.Context, bin, engine, model string) (fleet, error) {
			return startGRPCFleet(ctx, bin, engine, model, tok)
		}
		register = registerGRPCFleet
		banner = func(out io.Writer, engine, base string, fl fleet) { printGRPCBanner(out, engine, base, fl, tok) }
	}
	fl, err := start(ctx, bin, o.engine, demoModel)
	if err != nil {
		return &runError{fmt.Errorf("demo fleet: %w", err)}
	}
	defer fl.Stop()

	cfg := config.Default()
	cfg.Host, cfg.Port = o.host, o.port
	cfg.PDDisaggregation = true
	cfg.PrometheusPort = 0 // /metrics on the gateway port: one port to remember
	cfg.LogLevel = o.logLevel
	cfg.HealthCheckInterval = 5 * time.Second
	cfg.HealthCheckTimeout = 2 * time.Second
	cfg.ShutdownGracePeriod = 5 * time.Second
	cfg.ShutdownDrainDelay = 0 // no load balancer in front of a demo: stop at once on Ctrl-C
	if err := cfg.Validate(); err != nil {
		return err
	}
	var srv *app.Server
	var logs *telemetry.LogWriter
	tuneGC(os.LookupEnv, cfg.GOGC, cfg.MemoryLimitMB, nil)
	a := app.New(cfg, fx.Populate(&srv, &logs))
	defer closeLogs(logs)
	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	if err := a.Start(startCtx); err != nil {
		return &runError{fmt.Errorf("start gateway: %w", err)}
	}
	defer func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGracePeriod+5*time.Second)
		defer cancel()
		_ = a.Stop(stopCtx)
	}()

	base := "http://" + displayHost(o.host) + ":" + strconv.Itoa(srv.Addr().(*net.TCPAddr).Port)
	if err := register(ctx, srv.URL(), o.engine, fl); err != nil {
		return &runError{err}
	}
	if err := waitHealthy(ctx, srv.URL(), len(fl), 10*time.Second); err != nil {
		return &runError{err}
	}
	banner(out, o.engine, base, fl)
	<-ctx.Done()
	fmt.Fprintln(out, "\nsmg demo: stopping the gateway and the simulators...")
	return nil
}

// displayHost is the host to put in curl examples.
func displayHost(h string) string {
	switch h {
	case "", "0.0.0.0", "::", "[::]":
		return "127.0.0.1"
	}
	if strings.Contains(h, ":") {
		return "[" + h + "]"
	}
	return h
}

// registerFleet POSTs every simulator to /workers with the seed's body shape: runtime_type,
// bootstrap_port (SGLang prefills) or kv_connector NixlConnector (vLLM).
func registerFleet(ctx context.Context, gateway, engine string, fl fleet) error {
	for _, p := range fl {
		body := map[string]any{"url": p.URL, "worker_type": p.Role, "runtime_type": engine}
		if engine == "sglang" && p.Role == "prefill" {
			body["bootstrap_port"] = p.BootstrapPort
		}
		if engine == "vllm" {
			body["kv_connector"] = wire.ConnectorNixl
		}
		b, _ := json.Marshal(body)
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, gateway+"/workers", bytes.NewReader(b))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("register %s: %w", p.URL, err)
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("register %s: %s: %s", p.URL, resp.Status, oneLine(string(msg)))
		}
	}
	return nil
}

// waitHealthy polls GET /workers until want workers report is_healthy and /readiness is 200.
func waitHealthy(ctx context.Context, gateway string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for {
		healthy, err := countHealthy(ctx, gateway)
		if err != nil {
			last = err.Error()
		} else if healthy >= want && ready(ctx, gateway) {
			return nil
		} else {
			last = fmt.Sprintf("%d of %d workers healthy", healthy, want)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo fleet not ready within %s: %s", timeout, last)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func countHealthy(ctx context.Context, gateway string) (int, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gateway+"/workers", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var body struct {
		Workers []struct {
			IsHealthy bool `json:"is_healthy"`
		} `json:"workers"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return 0, fmt.Errorf("GET /workers: %s: %w", resp.Status, err)
	}
	n := 0
	for _, w := range body.Workers {
		if w.IsHealthy {
			n++
		}
	}
	return n, nil
}

func ready(ctx context.Context, gateway string) bool {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, gateway+"/readiness", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func printBanner(out io.Writer, engine, base string, fl fleet) {
	fmt.Fprintf(out, "smg demo: gateway on %s with a simulated %s fleet (smg-sim, model %q)\n\n", base, engine, demoModel)
	for _, p := range fl {
		extra := ""
		switch {
		case p.BootstrapPort > 0 && p.Role == "prefill":
			extra = "  bootstrap_port " + strconv.Itoa(p.BootstrapPort)
		case engine == "vllm":
			extra = "  kv_connector " + wire.ConnectorNixl
		}
		fmt.Fprintf(out, "  %-7s  %s%s\n", p.Role, p.URL, extra)
	}
	fmt.Fprintf(out, `
Try:
  curl -s %[1]s/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model": "%[2]s", "messages": [{"role": "user", "content": "Hello!"}], "max_tokens": 16}'

  curl -s %[1]s/workers | jq '.workers[] | {url, worker_type, is_healthy, pd_pairing}'
  curl -i %[1]s/readiness
  curl -s %[1]s/metrics | grep ^smg_

Press Ctrl-C to stop.
`, base, demoModel)
}
