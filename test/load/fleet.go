package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/smg-go/smg/test/sim"
)

// FleetConfig describes one benchmark fleet on 127.0.0.1: one prefill and one decode
// smg-sim of Engine and one smg gateway in front of them (round_robin, /metrics on the main
// port). vLLM workers use the NIXL connector and are registered through POST /workers with
// kv_connector "NixlConnector".
type FleetConfig struct {
	// BinDir holds the smg and smg-sim binaries (default "bin").
	BinDir string
	// Engine is sim.EngineSGLang or sim.EngineVLLM.
	Engine string
	// PrefillArgs and DecodeArgs are extra smg-sim flags (latency model, --max-running).
	PrefillArgs, DecodeArgs []string
	// GatewayArgs are extra `smg launch` flags; GatewayEnv extra environment (e.g. GOGC).
	GatewayArgs, GatewayEnv []string
	// StartTimeout bounds starting every process and the workers becoming ready (default 20 s).
	StartTimeout time.Duration
}

// Sim is one running smg-sim process.
type Sim struct {
	*Process
	// URL is http://127.0.0.1:PORT; BootstrapPort is 0 for roles without a bootstrap server.
	URL           string
	BootstrapPort int
}

// Fleet is a running fleet. Close stops it.
type Fleet struct {
	Engine          string
	Prefill, Decode *Sim
	Gateway         *Process
	// GatewayURL is the gateway's http://127.0.0.1:PORT.
	GatewayURL string
	admin      *http.Client
}

var (
	simReady     = regexp.MustCompile(`listening on (http://\S+) bootstrap=(\d+)`)
	gatewayReady = regexp.MustCompile(`smg listening.*"addr":"([^"]+)"`)
)

// StartFleet starts the two simulators, then the gateway, registers vLLM workers, and
// waits until the gateway lists both workers as ready. On any failure what was started
// is stopped and the error names the process (with its last output).
func StartFleet(ctx context.Context, c FleetConfig) (*Fleet, error) {
	if c.BinDir == "" {
		c.BinDir = "bin"
	}
	if c.StartTimeout <= 0 {
		c.StartTimeout = 20 * time.Second
	}
	if c.Engine != sim.EngineSGLang && c.Engine != sim.EngineVLLM {
		return nil, fmt.Errorf("load: engine must be %q or %q, got %q", sim.EngineSGLang, sim.EngineVLLM, c.Engine)
	}
	f := &Fleet{Engine: c.Engine, admin: &http.Client{Timeout: 5 * time.Second}}
	simBin := filepath.Join(c.BinDir, "smg-sim")
	var err error
	if f.Prefill, err = startSim(simBin, c.Engine, sim.RolePrefill, c.PrefillArgs, c.StartTimeout); err != nil {
		return nil, err
	}
	if f.Decode, err = startSim(simBin, c.Engine, sim.RoleDecode, c.DecodeArgs, c.StartTimeout); err != nil {
		f.Close()
		return nil, err
	}
	args := []string{"launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
		"--prometheus-port", "0", "--policy", "round_robin", "--log-json", "--shutdown-drain-delay-secs", "0"}
	if c.Engine == sim.EngineSGLang {
		args = append(args, "--prefill", f.Prefill.URL, strconv.Itoa(f.Prefill.BootstrapPort), "--decode", f.Decode.URL)
	}
	args = append(args, c.GatewayArgs...)
	gw, m, err := startProcess("gateway", filepath.Join(c.BinDir, "smg"), args, c.GatewayEnv, gatewayReady, c.StartTimeout)
	if err != nil {
		f.Close()
		return nil, err
	}
	f.Gateway, f.GatewayURL = gw, "http://"+m[1]
	if err := CheckLoopback(f.GatewayURL); err != nil {
		f.Close()
		return nil, err
	}
	if c.Engine == sim.EngineVLLM {
		for _, w := range []struct{ url, typ string }{{f.Prefill.URL, "prefill"}, {f.Decode.URL, "decode"}} {
			if err := f.register(ctx, w.url, w.typ); err != nil {
				f.Close()
				return nil, err
			}
		}
	}
	if err := f.waitReady(ctx, c.StartTimeout); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

func startSim(bin, engine, role string, extra []string, timeout time.Duration) (*Sim, error) {
	args := []string{"--engine", engine, "--role", role, "--host", "127.0.0.1", "--port", "0"}
	if engine == sim.EngineSGLang && role == sim.RolePrefill {
		args = append(args, "--bootstrap-port", "0")
	}
	if engine == sim.EngineVLLM {
		args = append(args, "--kv-connector", sim.ConnectorNixl)
	}
	p, m, err := startProcess(engine+" "+role, bin, append(args, extra...), nil, simReady, timeout)
	if err != nil {
		return nil, err
	}
	bp, _ := strconv.Atoi(m[2])
	return &Sim{Process: p, URL: m[1], BootstrapPort: bp}, nil
}

// register POSTs one vLLM NIXL worker to the gateway's /workers.
func (f *Fleet) register(ctx context.Context, workerURL, typ string) error {
	body, _ := json.Marshal(map[string]string{"url": workerURL, "worker_type": typ, "kv_connector": "NixlConnector"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, f.GatewayURL+"/workers", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := f.admin.Do(req)
	if err != nil {
		return fmt.Errorf("register %s worker %s: %w", typ, workerURL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, errBodySnippet))
		return fmt.Errorf("register %s worker %s: HTTP %d: %s", typ, workerURL, resp.StatusCode, b)
	}
	return nil
}

// waitReady polls GET /workers until two workers are "ready", within timeout.
func (f *Fleet) waitReady(ctx context.Context, timeout time.Duration) error {
	return f.waitReadyN(ctx, 2, timeout)
}

// waitReadyN polls GET /workers until n workers are "ready", within timeout.
func (f *Fleet) waitReadyN(ctx context.Context, n int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		var list struct {
			Workers []struct {
				URL    string `json:"url"`
				Status string `json:"status"`
			} `json:"workers"`
		}
		if err := f.getJSON(ctx, f.GatewayURL+"/workers", &list); err != nil {
			last = err.Error()
		} else {
			ready := 0
			for _, w := range list.Workers {
				if w.Status == "ready" {
					ready++
				}
			}
			if ready == n {
				return nil
			}
			last = fmt.Sprintf("%d of %d workers ready", ready, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("gateway workers not ready within %s: %s", timeout, last)
}

func (f *Fleet) getJSON(ctx context.Context, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := f.admin.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Stats returns the two simulators' /sim/stats counters.
func (f *Fleet) Stats(ctx context.Context) (prefill, decode sim.Stats, err error) {
	err = errors.Join(f.getJSON(ctx, f.Prefill.URL+"/sim/stats", &prefill), f.getJSON(ctx, f.Decode.URL+"/sim/stats", &decode))
	return prefill, decode, err
}

// Direct returns the fleet's direct-mode target for wl: DirectSGLang or DirectNIXL.
func (f *Fleet) Direct(wl Workload, hc *http.Client) (Target, error) {
	if f.Engine == sim.EngineSGLang {
		return NewDirectSGLang(f.Prefill.URL, "127.0.0.1", f.Prefill.BootstrapPort, f.Decode.URL, wl, hc)
	}
	return NewDirectNIXL(f.Prefill.URL, f.Decode.URL, wl, hc)
}

// Close stops the gateway, then the simulators.
func (f *Fleet) Close() {
	if f.Gateway != nil {
		f.Gateway.Stop(5 * time.Second)
	}
	for _, s := range []*Sim{f.Prefill, f.Decode} {
		if s != nil {
			s.Stop(3 * time.Second)
		}
	}
}

// CheckLoopback returns an error unless raw is an http URL whose host is a loopback IP
// address or "localhost": the load generator only targets this machine.
func CheckLoopback(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("load: bad URL %q: %w", raw, err)
	}
	if u.Scheme != "http" {
		return fmt.Errorf("load: %q: only http:// URLs are supported", raw)
	}
	h := u.Hostname()
	if h == "localhost" {
		return nil
	}
	if ip := net.ParseIP(h); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("load: %q is not a loopback address; the load generator targets 127.0.0.1 or ::1 only", raw)
}
