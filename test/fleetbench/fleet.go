package fleetbench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/load"
	"github.com/smg-go/smg/test/sim"
)

// FleetSpec is one cell's fleet: Prefills prefill and Decodes decode smg-sim processes of
// Engine over Transport, and Replicas smg gateways routing with Policy (sharing a
// redis-server this package starts when Replicas > 1).
type FleetSpec struct {
	// BinDir holds smg and smg-sim.
	BinDir string
	// Engine is sim.EngineVLLM (NIXL connector) or sim.EngineSGLang (bootstrap rooms).
	Engine string
	// Transport is TransportHTTP (default) or TransportGRPC (the engines' gRPC services; the
	// simulators serve TokenizerPath and the gateway loads it from them).
	Transport     string
	TokenizerPath string
	// Prefills, Decodes and Replicas are the process counts (each >= 1).
	Prefills, Decodes, Replicas int
	// Policy is every gateway's --policy (bucket: the decode leg gets round_robin).
	Policy string
	// Sim are the simulators' timing and cache flags.
	Sim SimKnobs
	// DecodeKVRole, when set, is the kv_role the decodes are registered with (kv_both lets
	// selective PD serve requests on them alone).
	DecodeKVRole string
	// GatewayArgs, PrefillArgs and DecodeArgs are extra flags per process kind.
	GatewayArgs, PrefillArgs, DecodeArgs []string
	// StartTimeout bounds each process's start and the workers becoming ready (default 30 s).
	StartTimeout time.Duration
	// DecodeWindow, when > 0, registers each decode with the max_running_requests label, so
	// the gateway's decode admission window (and its flow-control queue) gates it.
	DecodeWindow int
}

// Fleet is a running cell fleet; Close stops it (gateways, then simulators, then Redis).
type Fleet struct {
	Prefills, Decodes []*Sim
	Gateways          []*load.Process
	// GatewayURLs are the replicas' http://127.0.0.1:PORT, in start order.
	GatewayURLs []string
	// RedisURL is the shared state's redis://127.0.0.1:PORT/0, "" with one replica.
	RedisURL string
	redis    *load.Process
	dir      string
}

// Transports (FleetSpec.Transport).
const (
	TransportHTTP = "http"
	TransportGRPC = "grpc"
)

// Sim is one running smg-sim process.
type Sim struct {
	*load.Process
	// URL is its http:// or grpc:// address; StatsURL serves /sim/stats (URL over HTTP).
	URL, StatsURL string
	// BootstrapPort is its bootstrap (KV side channel) port, 0 when it has none.
	BootstrapPort int
}

var (
	simReady     = regexp.MustCompile(`listening on ((?:http|grpc)://\S+) bootstrap=(\d+)(?: stats=(http://\S+))?`)
	gatewayReady = regexp.MustCompile(`smg listening.*"addr":"([^"]+)"`)
	redisReady   = regexp.MustCompile(`[Rr]eady to accept connections`)
)

// StartFleet starts the simulators, Redis (Replicas > 1) and the gateways, which all read
// one --workers-file listing every simulator, and waits until each gateway lists every
// worker as ready. On failure what was started is stopped; the error names the process.
func StartFleet(ctx context.Context, s FleetSpec) (*Fleet, error) {
	if s.Engine != sim.EngineSGLang && s.Engine != sim.EngineVLLM {
		return nil, fmt.Errorf("fleetbench: engine must be %q or %q, got %q", sim.EngineSGLang, sim.EngineVLLM, s.Engine)
	}
	if s.Transport == "" {
		s.Transport = TransportHTTP
	}
	if s.Transport != TransportHTTP && s.Transport != TransportGRPC {
		return nil, fmt.Errorf("fleetbench: transport must be %q or %q, got %q", TransportHTTP, TransportGRPC, s.Transport)
	}
	if s.Transport == TransportGRPC && s.TokenizerPath == "" {
		return nil, fmt.Errorf("fleetbench: the gRPC transport needs a tokenizer directory (make fixtures, or --tokenizer-path)")
	}
	if s.Prefills < 1 || s.Decodes < 1 || s.Replicas < 1 {
		return nil, fmt.Errorf("fleetbench: need at least one prefill, decode and replica, got %d, %d, %d", s.Prefills, s.Decodes, s.Replicas)
	}
	if s.StartTimeout <= 0 {
		s.StartTimeout = 30 * time.Second
	}
	dir, err := os.MkdirTemp("", "smg-fleetbench-")
	if err != nil {
		return nil, err
	}
	f := &Fleet{dir: dir}
	ok := false
	defer func() {
		if !ok {
			f.Close()
		}
	}()
	simBin := filepath.Join(s.BinDir, "smg-sim")
	for i := range s.Prefills {
		p, err := startSim(simBin, s, sim.RolePrefill, i, append(s.Sim.args(sim.RolePrefill), s.PrefillArgs...))
		if err != nil {
			return nil, err
		}
		f.Prefills = append(f.Prefills, p)
	}
	for i := range s.Decodes {
		d, err := startSim(simBin, s, sim.RoleDecode, i, append(s.Sim.args(sim.RoleDecode), s.DecodeArgs...))
		if err != nil {
			return nil, err
		}
		f.Decodes = append(f.Decodes, d)
	}
	workersFile, err := f.writeWorkersFile(s.Engine, s.Transport, s.DecodeKVRole, s.DecodeWindow)
	if err != nil {
		return nil, err
	}
	if s.Replicas > 1 {
		if err := f.startRedis(s.StartTimeout); err != nil {
			return nil, err
		}
	}
	for i := range s.Replicas {
		args := []string{"launch", "--pd-disaggregation", "--host", "127.0.0.1", "--port", "0",
			"--prometheus-port", "0", "--policy", s.Policy, "--log-json", "--shutdown-drain-delay-secs", "0",
			"--workers-file", workersFile}
		if s.Policy == wire.PolicyBucket {
			// bucket is prefill-only (domain/policy registry): the decode leg is round-robin.
			args = append(args, "--decode-policy", wire.PolicyRoundRobin)
		}
		if f.RedisURL != "" {
			args = append(args, "--redis-url", f.RedisURL, "--redis-key-prefix", "fleetbench:")
		}
		gw, m, err := load.StartProcess("gateway "+strconv.Itoa(i), filepath.Join(s.BinDir, "smg"), append(args, s.GatewayArgs...), nil, gatewayReady, s.StartTimeout)
		if err != nil {
			return nil, err
		}
		f.Gateways = append(f.Gateways, gw)
		u := "http://" + m[1]
		if err := load.CheckLoopback(u); err != nil {
			return nil, err
		}
		f.GatewayURLs = append(f.GatewayURLs, u)
	}
	for _, u := range f.GatewayURLs {
		if err := waitWorkers(ctx, u, s.Prefills+s.Decodes, s.StartTimeout); err != nil {
			return nil, err
		}
	}
	ok = true
	return f, nil
}

func startSim(bin string, s FleetSpec, role string, i int, extra []string) (*Sim, error) {
	args := []string{"--transport", s.Transport, "--engine", s.Engine, "--role", role, "--host", "127.0.0.1", "--port", "0"}
	if s.Engine == sim.EngineSGLang && role == sim.RolePrefill {
		args = append(args, "--bootstrap-port", "0")
	}
	if s.Engine == sim.EngineVLLM {
		args = append(args, "--kv-connector", sim.ConnectorNixl)
	}
	if s.Transport == TransportGRPC {
		args = append(args, "--stats-port", "0", "--tokenizer-path", s.TokenizerPath)
	}
	p, m, err := load.StartProcess(fmt.Sprintf("%s %s %s %d", s.Transport, s.Engine, role, i), bin, append(args, extra...), nil, simReady, s.StartTimeout)
	if err != nil {
		return nil, err
	}
	bp, _ := strconv.Atoi(m[2])
	st := m[3]
	if st == "" {
		st = m[1]
	}
	return &Sim{Process: p, URL: m[1], StatsURL: st, BootstrapPort: bp}, nil
}

// writeWorkersFile writes the `smg launch --workers-file` JSON list of every simulator:
// POST /workers bodies with worker_type, and kv_connector NixlConnector (HTTP vLLM; a gRPC
// vLLM servicer reports its own) or the prefill's bootstrap_port (SGLang); runtime_type for
// gRPC workers.
func (f *Fleet) writeWorkersFile(engine, transport, decodeKVRole string, window int) (string, error) {
	type entry struct {
		URL           string            `json:"url"`
		WorkerType    string            `json:"worker_type"`
		RuntimeType   string            `json:"runtime_type,omitempty"`
		KVConnector   string            `json:"kv_connector,omitempty"`
		KVRole        string            `json:"kv_role,omitempty"`
		BootstrapPort *int              `json:"bootstrap_port,omitempty"`
		Labels        map[string]string `json:"labels,omitempty"`
	}
	var list []entry
	for role, sims := range map[string][]*Sim{sim.RolePrefill: f.Prefills, sim.RoleDecode: f.Decodes} {
		for _, s := range sims {
			e := entry{URL: s.URL, WorkerType: role}
			if role == sim.RoleDecode {
				e.KVRole = decodeKVRole
			}
			if window > 0 && role == sim.RoleDecode {
				e.Labels = map[string]string{wire.LabelMaxRunningRequests: strconv.Itoa(window)}
			}
			if transport == TransportGRPC {
				e.RuntimeType = engine
			}
			switch {
			case engine == sim.EngineVLLM && transport == TransportHTTP:
				e.KVConnector = "NixlConnector"
			case engine == sim.EngineSGLang && role == sim.RolePrefill:
				bp := s.BootstrapPort
				e.BootstrapPort = &bp
			}
			list = append(list, e)
		}
	}
	b, err := json.Marshal(map[string]any{"workers": list})
	if err != nil {
		return "", err
	}
	p := filepath.Join(f.dir, "workers.json")
	return p, os.WriteFile(p, b, 0o600)
}

// startRedis starts `redis-server --port P --bind 127.0.0.1 --save ” --appendonly no` on a
// free loopback port (retried on a new port if that one was taken meanwhile).
func (f *Fleet) startRedis(timeout time.Duration) error {
	var last error
	for range 3 {
		port, err := freePort()
		if err != nil {
			return err
		}
		p, _, err := load.StartProcess("redis-server", "redis-server", []string{"--port", strconv.Itoa(port),
			"--bind", "127.0.0.1", "--save", "", "--appendonly", "no"}, nil, redisReady, timeout)
		if err == nil {
			f.redis, f.RedisURL = p, fmt.Sprintf("redis://127.0.0.1:%d/0", port)
			return nil
		}
		last = err
	}
	return fmt.Errorf("fleetbench: redis-server (Debian package redis-server) for the shared state of several replicas: %w", last)
}

func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// waitWorkers polls GET /workers on gateway u until n workers are "ready", within timeout.
func waitWorkers(ctx context.Context, u string, n int, timeout time.Duration) error {
	hc := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(timeout)
	last := "no answer"
	for time.Now().Before(deadline) {
		var list struct {
			Workers []struct {
				Status string `json:"status"`
			} `json:"workers"`
		}
		if err := getJSON(ctx, hc, u+"/workers", &list); err != nil {
			last = err.Error()
		} else {
			ready := 0
			for _, w := range list.Workers {
				if w.Status == "ready" {
					ready++
				}
			}
			if ready >= n {
				return nil
			}
			last = fmt.Sprintf("%d of %d workers ready", ready, n)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return fmt.Errorf("fleetbench: gateway %s: workers not ready within %s: %s", u, timeout, last)
}

func getJSON(ctx context.Context, hc *http.Client, u string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: HTTP %d", u, resp.StatusCode)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

// Close stops the gateways, then the simulators, then Redis, and removes the workers file.
// Safe on a partly started fleet.
func (f *Fleet) Close() {
	for _, g := range f.Gateways {
		g.Stop(5 * time.Second)
	}
	for _, s := range append(append([]*Sim(nil), f.Prefills...), f.Decodes...) {
		s.Stop(3 * time.Second)
	}
	if f.redis != nil {
		f.redis.Stop(3 * time.Second)
	}
	if f.dir != "" {
		_ = os.RemoveAll(f.dir)
	}
}
