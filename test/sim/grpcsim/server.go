package grpcsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/peer"

	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	tokenspeedencoderpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeedencoder"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
	"github.com/smg-go/smg/test/sim/compute"
	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// Server is one running simulated gRPC engine. Close stops it.
type Server struct {
	cfg    Config
	faults []Fault
	c      counters
	kv     *kvStore
	cache  *kvcache.Cache
	eng    *compute.Engine
	start  time.Time

	grpc      *grpc.Server
	grpcLn    net.Listener
	stats     *http.Server
	statsLn   net.Listener
	boot      *http.Server
	bootLn    net.Listener
	conns     sync.Map // remote addr -> net.Conn (the reset fault closes one)
	wg        sync.WaitGroup
	closeOnce sync.Once
	done      chan struct{} // closed by Close: ends KV leases
	hc        *http.Client  // a decode's side-channel client (own transport, closed by Close)
	unhealthy atomic.Bool   // SetHealthy(false): HealthCheck answers healthy=false
	kvev      *kvevents.Set // KV event publishers per DP rank; nil without KV events
	liveMu    sync.RWMutex
	live      []Fault // faults added at run time (SetFault, POST /sim/fault)

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc // request id -> cancel (Abort RPC)
	sampled []Sampling                         // the sampling knobs of each Generate (capped)
	media   EPDStats                           // EPD seen, under mu
}

// errAbortRPC is the cancellation cause of a request ended by an Abort RPC.
var errAbortRPC = errors.New("aborted by Abort RPC")

// Start validates cfg, opens the gRPC, stats and (prefill) side-channel listeners on
// loopback (or cfg.Host) and serves until Close.
func Start(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, kv: newKVStore(), start: time.Now(), running: map[string]context.CancelCauseFunc{}, done: make(chan struct{}),
		hc: &http.Client{Transport: cfg.SideChannel}}
	if cfg.SideChannel == nil {
		s.hc.Transport = NewSideChannelTransport()
	}
	for _, f := range cfg.Faults {
		ff, _ := ParseFault(f)
		s.faults = append(s.faults, ff)
	}
	s.kvev, err = kvevents.NewSet(kvevents.Options{
		Config: cfg.kvEvents, Encoding: kvevents.EncodingFor(cfg.kvEventsDialect(), cfg.KVEventsArray), BindHost: cfg.Host,
	}, cfg.DPSize)
	if err != nil {
		return nil, fmt.Errorf("grpcsim: kv events: %w", err)
	}
	// The cache publishes to Config.KVEventSink and, with KV events on, through the
	// streamed rank's publisher (one cache per instance).
	sink := kvevents.Tee(cfg.KVEventSink, s.KVEventSink(s.streamRank()))
	if s.cache, err = kvcache.New(kvcache.Config{BlockSize: cfg.PageSize, Blocks: cfg.KVCacheBlocks, Sink: sink}); err != nil {
		_ = s.kvev.Close()
		return nil, fmt.Errorf("grpcsim: %w", err)
	}
	s.eng = compute.New(compute.Config{MaxRunning: cfg.MaxRunning, PrefillTokensPerS: cfg.PrefillTokensPerS,
		PrefillFixed: cfg.PrefillFixed, ChunkTokens: cfg.PrefillChunkTokens, TransferPerBlock: cfg.KVTransferPerBlock})
	ln, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		_ = s.kvev.Close()
		return nil, fmt.Errorf("grpcsim: listen: %w", err)
	}
	s.grpcLn = &trackingListener{Listener: ln, conns: &s.conns}
	s.grpc = grpc.NewServer(
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: 5 * time.Second, PermitWithoutStream: true}),
	)
	switch {
	case cfg.Engine == EngineSGLang:
		sglangpb.RegisterSglangSchedulerServer(s.grpc, &sglangService{s: s})
	case cfg.Engine == EngineVLLM:
		vllmpb.RegisterVllmEngineServer(s.grpc, &vllmService{s: s})
	default:
		// An encode worker also serves the scheduler service (info, health, tokenizer).
		tokenspeedpb.RegisterTokenSpeedSchedulerServer(s.grpc, &tokenspeedService{s: s})
		if cfg.Role == RoleEncode {
			tokenspeedencoderpb.RegisterTokenSpeedEncoderServer(s.grpc, &encoderService{s: s})
		}
	}
	if s.statsLn, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.StatsPort))); err != nil {
		_ = ln.Close()
		_ = s.kvev.Close()
		return nil, fmt.Errorf("grpcsim: stats listen: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /sim/stats", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s.Stats())
	})
	mux.HandleFunc("POST /sim/reset", func(w http.ResponseWriter, _ *http.Request) {
		s.Reset()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /sim/fault", s.serveFault)
	mux.HandleFunc("DELETE /sim/fault", s.serveFault)
	mux.HandleFunc("POST /sim/health", func(w http.ResponseWriter, r *http.Request) {
		ok, err := strconv.ParseBool(r.URL.Query().Get("ok"))
		if err != nil {
			http.Error(w, "want ?ok=true or ?ok=false", http.StatusBadRequest)
			return
		}
		s.SetHealthy(ok)
		w.WriteHeader(http.StatusNoContent)
	})
	s.stats = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	if cfg.Role == RolePrefill || cfg.Role == RoleEncode {
		if s.bootLn, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.BootstrapPort))); err != nil {
			_ = ln.Close()
			_ = s.statsLn.Close()
			_ = s.kvev.Close()
			return nil, fmt.Errorf("grpcsim: bootstrap listen: %w", err)
		}
		bmux := http.NewServeMux()
		bmux.HandleFunc("GET "+kvPath, s.serveKV)
		s.boot = &http.Server{Handler: bmux, ReadHeaderTimeout: 5 * time.Second}
		s.serve(func() { _ = s.boot.Serve(s.bootLn) })
	}
	s.serve(func() { _ = s.grpc.Serve(s.grpcLn) })
	s.serve(func() { _ = s.stats.Serve(s.statsLn) })
	return s, nil
}

func (s *Server) serve(f func()) {
	s.wg.Add(1)
	go func() { defer s.wg.Done(); f() }()
}

// Close stops every listener and in-flight RPC and waits for them.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.done)
		s.grpc.Stop()
		_ = s.stats.Close()
		if s.boot != nil {
			_ = s.boot.Close()
		}
		s.wg.Wait()
		_ = s.kvev.Close()
		if s.cfg.SideChannel == nil {
			s.hc.CloseIdleConnections() // a shared transport outlives the instance
		}
	})
	return nil
}

// Config is the effective configuration (defaults filled).
func (s *Server) Config() Config { return s.cfg }

// Addr is the gRPC "host:port"; URL is "grpc://host:port".
func (s *Server) Addr() string { return s.grpcLn.Addr().String() }

// URL is the worker URL to register: "grpc://host:port".
func (s *Server) URL() string { return "grpc://" + s.Addr() }

// Port is the gRPC port.
func (s *Server) Port() int { return s.grpcLn.Addr().(*net.TCPAddr).Port }

// BootstrapPort is the side-channel port of a prefill (or encode) instance; 0 otherwise.
func (s *Server) BootstrapPort() int {
	if s.bootLn == nil {
		return 0
	}
	return s.bootLn.Addr().(*net.TCPAddr).Port
}

// StatsURL is "http://host:port" of the /sim/stats listener.
func (s *Server) StatsURL() string { return "http://" + s.statsLn.Addr().String() }

// SetHealthy switches what HealthCheck answers (healthy=true by default); the engine keeps
// serving everything else, as a servicer whose scheduler is wedged would.
func (s *Server) SetHealthy(ok bool) { s.unhealthy.Store(!ok) }

// health is the HealthCheck answer.
func (s *Server) health() (bool, string) {
	if s.unhealthy.Load() {
		return false, "scheduler is not responding"
	}
	return true, "ok"
}

// Stats returns the current counters and media log; Reset zeroes them.
func (s *Server) Stats() Stats {
	st := s.c.snapshot()
	st.EPD = s.mediaSnapshot()
	kv := s.cache.Stats()
	st.Waiting = s.eng.Waiting()
	st.PromptTokens, st.CachedTokens, st.EvictedBlocks, st.KVCacheBlocksUsed = kv.PromptTokens, kv.CachedTokens, kv.EvictedBlocks, kv.BlocksUsed
	st.QueueMS, st.BusyMS = s.eng.QueueMS(), s.eng.BusyMS()
	return st
}

// Reset zeroes the counters and the media log (gauges keep their live values).
func (s *Server) Reset() {
	s.c.reset()
	s.cache.ResetCounters()
	s.eng.Reset()
	s.mu.Lock()
	s.media = EPDStats{}
	s.mu.Unlock()
}

// FlushCache drops every cached KV block, publishing AllBlocksCleared to
// Config.KVEventSink (SGLang's flush_cache, vLLM's reset_prefix_cache).
func (s *Server) FlushCache() { s.cache.Clear() }

// PendingHandoffs is the number of live handoff keys (leak checks).
func (s *Server) PendingHandoffs() int { return s.kv.size() }

// engineID is the KV engine id this instance reports (after MultiConnector reduction).
func (s *Server) engineID() string {
	_, id := s.cfg.connectorReport()
	return id
}

// track registers a running request under id for Abort; the returned func unregisters it.
func (s *Server) track(id string, cancel context.CancelCauseFunc) func() {
	s.mu.Lock()
	s.running[id] = cancel
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.running, id)
		s.mu.Unlock()
	}
}

// abort cancels the running request id and, with children, every "id-n<i>" (TokenSpeed);
// it reports whether any was running.
func (s *Server) abort(id string, children bool) bool {
	s.c.abortRPCs.Add(1)
	s.c.lastAbort.Store(time.Now().UnixMilli())
	var child *regexp.Regexp
	if children {
		child = regexp.MustCompile("^" + regexp.QuoteMeta(id) + `-n\d+$`)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	found := false
	for rid, cancel := range s.running {
		if rid == id || (child != nil && child.MatchString(rid)) {
			cancel(errAbortRPC)
			found = true
		}
	}
	return found
}

// resetConn closes the TCP connection the RPC in ctx arrived on (the reset fault).
func (s *Server) resetConn(ctx context.Context) {
	if p, ok := peer.FromContext(ctx); ok && p.Addr != nil {
		if c, ok := s.conns.Load(p.Addr.String()); ok {
			_ = c.(net.Conn).Close()
		}
	}
}

// trackingListener remembers accepted connections by remote address.
type trackingListener struct {
	net.Listener
	conns *sync.Map
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, conns: l.conns}
	l.conns.Store(c.RemoteAddr().String(), tc)
	return tc, nil
}

type trackedConn struct {
	net.Conn
	conns *sync.Map
	once  sync.Once
}

func (c *trackedConn) Close() error {
	c.once.Do(func() { c.conns.Delete(c.RemoteAddr().String()) })
	return c.Conn.Close()
}

// NewSideChannelTransport is the HTTP transport of a decode's KV side-channel requests:
// keep-alive, no proxy, at most 64 idle connections per prefill and 4,096 in all. One
// instance owns one; the instances of a process (smg-sim --instances) share one
// (Config.SideChannel).
func NewSideChannelTransport() *http.Transport {
	return &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 64, MaxIdleConns: 4096}
}
