package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"
)

// withPprof runs fn while serving the Go profiler (net/http/pprof: /debug/pprof/...) on
// addr, a loopback host:port, when addr is not empty (`smg launch --pprof-addr`, for
// profiling under load; see docs/benchmarks.md). A non-loopback host or a port that cannot
// be bound is a usage error before fn runs; the listener closes when fn returns.
func withPprof(addr string, fn func() error) error {
	if addr == "" {
		return fn()
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("invalid value %q for --pprof-addr: expected host:port: %v", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("invalid value %q for --pprof-addr: the profiler listens on a loopback address only (127.0.0.1 or ::1)", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usagef("invalid value %q for --pprof-addr: %v", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "pprof listener stopped: %v\n", err)
		}
	}()
	defer srv.Close()
	return fn()
}
