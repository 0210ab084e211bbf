package sim

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/smg-go/smg/test/sim/compute"
	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// Server is one running simulated engine instance. Its methods are safe for concurrent use.
type Server struct {
	cfg    Config
	faults []Fault
	c      counters
	// live are the faults added at run time (SetFault, POST /sim/fault).
	liveMu sync.RWMutex
	live   []Fault

	port, bootPort int
	// hsPort and notifyPort are the MoRI-IO side-channel listeners (0 without MoRI-IO).
	hsPort, notifyPort int
	url                string
	idPrefix           string

	mainSrv, bootSrv *http.Server
	hsSrv, notifySrv *http.Server
	ctx              context.Context
	cancel           context.CancelFunc
	wg               sync.WaitGroup // serve loops and background leases

	rv        *rendezvous
	nixl      *nixlStore
	mori      *nixlStore // MoRI-IO READ blocks, keyed by transfer_id
	eng       *compute.Engine
	kv        *kvcache.Cache
	tok       tokenizer
	transport *http.Transport
	client    *http.Client
	seq       atomic.Uint64
	pushes    atomic.Int64 // MoRI-IO WRITE pushes in flight
	closeOnce sync.Once
	closeErr  error
	// kvev are the KV event publishers, one per DP rank; nil without KV events.
	kvev *kvevents.Set
}

func randomID() string { return uuid.NewString() }

// Start validates cfg (filling defaults), binds the main listener and, for a SGLang prefill
// or a vLLM Mooncake prefill, the bootstrap listener, and serves both in the background.
// It returns an error for an invalid Config or a port that cannot be bound.
func Start(cfg Config) (*Server, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, rv: newRendezvous(), nixl: newNixlStore(), mori: newNixlStore(), idPrefix: cfg.EngineID[:min(8, len(cfg.EngineID))] + "-"}
	for _, f := range cfg.Faults {
		fl, _ := ParseFault(f)
		s.faults = append(s.faults, fl)
	}
	s.eng = compute.New(compute.Config{MaxRunning: cfg.MaxRunning, PrefillTokensPerS: cfg.PrefillTokensPerS,
		PrefillFixed: cfg.PrefillFixed, ChunkTokens: cfg.PrefillChunkTokens, TransferPerBlock: cfg.KVTransferPerBlock})
	if s.tok, err = loadTokenizer(cfg.TokenizerPath); err != nil {
		return nil, err
	}
	if s.transport = cfg.SideChannel; s.transport == nil {
		s.transport = NewSideChannelTransport()
	}
	s.client = &http.Client{Transport: s.transport}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	// The KV event publishers come first: the cache publishes through them.
	if s.kvev, err = kvevents.NewSet(kvevents.Options{
		Config: cfg.kvEvents, Encoding: kvevents.EncodingFor(cfg.Engine, cfg.KVEventsArray), BindHost: cfg.Host,
	}, cfg.kvEventRanks()); err != nil {
		s.cancel()
		return nil, fmt.Errorf("sim: kv events: %w", err)
	}
	started := false
	defer func() {
		if !started {
			s.cancel()
			_ = s.kvev.Close()
		}
	}()
	// One cache per instance: its events go to Config.KVEventSink and, with KV events on,
	// through rank 0's publisher.
	sink := kvevents.Tee(cfg.KVEventSink, s.KVEventSink(0))
	if s.kv, err = kvcache.New(kvcache.Config{BlockSize: cfg.BlockSize, Blocks: cfg.KVCacheBlocks, Sink: sink}); err != nil {
		return nil, fmt.Errorf("sim: %w", err)
	}

	mainLn, err := net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.Port)))
	if err != nil {
		return nil, err
	}
	s.port = mainLn.Addr().(*net.TCPAddr).Port
	s.url = "http://" + net.JoinHostPort(cfg.Host, strconv.Itoa(s.port))
	var bootLn net.Listener
	if cfg.needsBootstrap() {
		bootLn, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.BootstrapPort)))
		if err != nil {
			_ = mainLn.Close()
			return nil, err
		}
		s.bootPort = bootLn.Addr().(*net.TCPAddr).Port
	}
	var hsLn, notifyLn net.Listener
	if cfg.Engine == EngineVLLM && cfg.KVConnector == ConnectorMoRIIO {
		if hsLn, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MoRIIOHandshakePort))); err == nil {
			if notifyLn, err = net.Listen("tcp", net.JoinHostPort(cfg.Host, strconv.Itoa(cfg.MoRIIONotifyPort))); err != nil {
				_ = hsLn.Close()
			}
		}
		if err != nil {
			_ = mainLn.Close()
			if bootLn != nil {
				_ = bootLn.Close()
			}
			return nil, err
		}
		s.hsPort, s.notifyPort = hsLn.Addr().(*net.TCPAddr).Port, notifyLn.Addr().(*net.TCPAddr).Port
	}
	s.mainSrv = s.newHTTPServer(s.mainMux())
	s.serve(s.mainSrv, mainLn)
	if bootLn != nil {
		s.bootSrv = s.newHTTPServer(s.bootMux())
		s.serve(s.bootSrv, bootLn)
	}
	if hsLn != nil {
		s.hsSrv, s.notifySrv = s.newHTTPServer(s.moriioMux(false)), s.newHTTPServer(s.moriioMux(true))
		s.serve(s.hsSrv, hsLn)
		s.serve(s.notifySrv, notifyLn)
	}
	started = true
	return s, nil
}

func (s *Server) newHTTPServer(h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return s.ctx },
		ErrorLog:          log.New(io.Discard, "", 0),
	}
}

func (s *Server) serve(srv *http.Server, ln net.Listener) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		_ = srv.Serve(ln)
	}()
}

// URL is the main listener's base URL, "http://<host>:<port>".
func (s *Server) URL() string { return s.url }

// Port is the main listener's port.
func (s *Server) Port() int { return s.port }

// BootstrapPort is the bootstrap listener's port, 0 when the role has none.
func (s *Server) BootstrapPort() int { return s.bootPort }

// MoRIIOPorts are the MoRI-IO handshake and notify ports, 0 without MoRI-IO.
func (s *Server) MoRIIOPorts() (handshake, notify int) { return s.hsPort, s.notifyPort }

// EngineID is the KV engine id (vLLM remote_engine_id).
func (s *Server) EngineID() string { return s.cfg.EngineID }

// Config returns the effective configuration (defaults filled in).
func (s *Server) Config() Config { return s.cfg }

// Stats returns the counters, the same numbers as GET /sim/stats.
func (s *Server) Stats() Stats {
	st := s.c.snapshot()
	kv := s.kv.Stats()
	st.Waiting = s.eng.Waiting()
	st.PromptTokens, st.CachedTokens, st.EvictedBlocks, st.KVCacheBlocksUsed = kv.PromptTokens, kv.CachedTokens, kv.EvictedBlocks, kv.BlocksUsed
	st.QueueMS, st.BusyMS = s.eng.QueueMS(), s.eng.BusyMS()
	return st
}

// Reset zeroes the counters, like POST /sim/reset. Running and Waiting stay live gauges and
// MaxRunningSeen restarts from the current Running.
func (s *Server) Reset() {
	s.c.reset()
	s.kv.ResetCounters()
	s.eng.Reset()
}

// FlushCache drops every cached KV block (SGLang POST /flush_cache, vLLM POST
// /reset_prefix_cache), publishing AllBlocksCleared to Config.KVEventSink.
func (s *Server) FlushCache() { s.kv.Clear() }

// PendingHandoffs is the number of rooms, transfers, NIXL and MoRI-IO block sets currently
// held and MoRI-IO WRITE pushes in flight (0 once every handoff has completed or expired,
// and then the counters of those handoffs are final).
func (s *Server) PendingHandoffs() int {
	return s.rv.size() + s.nixl.size() + s.mori.size() + int(s.pushes.Load())
}

// Close stops the listeners, cancels in-flight requests and handoff waits, and returns once
// every goroutine the server started has exited. It is idempotent.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.cancel()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, srv := range []*http.Server{s.mainSrv, s.bootSrv, s.hsSrv, s.notifySrv} {
			if srv == nil {
				continue
			}
			if err := srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				s.closeErr = err
			}
			_ = srv.Close()
		}
		s.nixl.close()
		s.mori.close()
		s.wg.Wait()
		_ = s.kvev.Close()
		if s.cfg.SideChannel == nil {
			s.transport.CloseIdleConnections() // a shared transport outlives the instance
		}
	})
	return s.closeErr
}

// NewSideChannelTransport is the HTTP transport of a simulator's KV side-channel requests:
// keep-alive, no proxy, at most 4,096 idle connections in all and 2,048 per peer. One
// instance owns one; the instances of a process (smg-sim --instances) share one
// (Config.SideChannel).
func NewSideChannelTransport() *http.Transport {
	return &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        4096,
		MaxIdleConnsPerHost: 2048,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
}
