// Command smg-sim runs one simulated SGLang or vLLM prefill/decode engine instance (issue
// #2): it parses flags into sim.Config, starts the simulator, prints one ready line and
// serves until SIGINT or SIGTERM. See package github.com/smg-go/smg/test/sim.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/kvevents"
)

func main() {
	if err := newCommand().Execute(); err != nil {
		os.Exit(2)
	}
}

// seconds is a duration flag that accepts a Go duration ("300ms", "2m") or bare seconds
// ("30", "0.5").
type seconds struct{ d *time.Duration }

func (s seconds) String() string { return s.d.String() }
func (s seconds) Type() string   { return "duration" }
func (s seconds) Set(v string) error {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		*s.d = time.Duration(f * float64(time.Second))
		return nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return fmt.Errorf("want a duration like 300ms or 30s, or bare seconds")
	}
	*s.d = d
	return nil
}

// runFn and runGRPCFn start the simulator the flags describe (replaced by tests that check
// the flags' mapping).
var (
	runFn     = run
	runGRPCFn = runGRPC
)

func newCommand() *cobra.Command {
	cfg := sim.DefaultConfig()
	cfg.Engine, cfg.Role = "", ""
	var itlMS, itlPerRunningMS, prefillFixedMS, transferMSPerBlock float64
	var prefixCache bool
	var transport string
	var g grpcFlags
	n := 1
	cmd := &cobra.Command{
		Use:   "smg-sim --engine sglang|vllm|tokenspeed [--transport http|grpc] --role prefill|decode|encode [flags]",
		Short: "Simulated SGLang / vLLM prefill or decode engine that checks the PD KV handoff",
		Long: `smg-sim serves one engine instance on loopback and checks the PD handoff for real:
SGLang bootstrap rooms (a prefill runs a bootstrap server; a decode claims its room at
bootstrap_host:bootstrap_port), vLLM NIXL kv_transfer_params (a decode pulls the blocks
from remote_host:remote_port) and vLLM Mooncake transfers (a decode fetches transfer_id from
remote_bootstrap_addr) and vLLM MoRI-IO (--kv-connector moriio --moriio-mode read|write:
a READ decode pulls from the prefill's handshake port, a WRITE prefill pushes to the
decode's notify port; a WRITE decode aborted before write_done keeps its blocks, counted in
leaked_blocks). Counters: GET /sim/stats, POST /sim/reset.

Per-request faults: body field sim_fault, "<prefill|decode|any>:<kind>[:<arg>]" or a list.
Fault kinds: status:<code>, reset, hang, die-after:<tokens>, malformed,
slow-first-byte:<ms>, delay-body:<ms>, no-kv-params, and for a MoRI-IO prefill
handoff-missing-field, handoff-wrong-transfer-id, handoff-wrong-ports.

When ready it prints one line (one per instance with --instances N, in order):
  smg-sim <engine> <role> listening on http://HOST:PORT bootstrap=PORT engine_id=ID
(bootstrap=0 when the role has no bootstrap server), followed by
" moriio_handshake=PORT moriio_notify=PORT" for MoRI-IO, and with --kv-events-config by
" kv_events=ENDPOINT[,…]" (one ZMQ PUB endpoint per DP rank) and, with a replay_endpoint,
" kv_events_replay=ENDPOINT[,…]". Runtime faults: POST /sim/fault?kind=hang and, with KV
events, kind=kv-events-gap|kv-events-stall|kv-events-garbage; DELETE /sim/fault clears
them. SIGINT/SIGTERM stop it cleanly.`,
		SilenceUsage: true,
		Args:         cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg.ITL = time.Duration(itlMS * float64(time.Millisecond))
			cfg.ITLPerRunning = time.Duration(itlPerRunningMS * float64(time.Millisecond))
			cfg.PrefillFixed = time.Duration(prefillFixedMS * float64(time.Millisecond))
			cfg.KVTransferPerBlock = time.Duration(transferMSPerBlock * float64(time.Millisecond))
			if cfg.Engine == "" || cfg.Role == "" {
				return fmt.Errorf("--engine and --role are required")
			}
			if err := checkInstances(n, cfg.KVEventsConfig); err != nil {
				return err
			}
			switch transport {
			case "grpc":
				return runGRPCFn(cmd.Context(), grpcConfig(cfg, g), n, cmd.OutOrStdout())
			case "http":
			default:
				return fmt.Errorf("--transport %q: want http or grpc", transport)
			}
			if cfg.Engine == "tokenspeed" {
				return fmt.Errorf("--engine tokenspeed is gRPC-only: add --transport grpc")
			}
			cfg.DPSize = g.dpSize // SGLang HTTP: /server_info dp_size, routed_dp_rank checked
			return runFn(cmd.Context(), cfg, n, cmd.OutOrStdout())
		},
	}
	f := cmd.Flags()
	f.IntVar(&n, "instances", 1,
		"independent workers of this engine and role served by this process, on --port+i (and every other fixed port +i; 0 = free ports), engine ids <engine-id>-i; one ready line each, each with its own /sim/stats and faults")
	f.StringVar(&transport, "transport", "http", `"http" (SGLang/vLLM HTTP servers) or "grpc" (the engines' gRPC services; TokenSpeed is gRPC-only)`)
	g.register(f)
	f.StringVar(&cfg.Engine, "engine", "", `engine to simulate: "sglang", "vllm" or (gRPC) "tokenspeed" (required)`)
	f.StringVar(&cfg.Role, "role", "", `PD role: "prefill", "decode" or (gRPC TokenSpeed) "encode" (required)`)
	f.StringVar(&cfg.Host, "host", cfg.Host, "listen address of every listener")
	f.IntVar(&cfg.Port, "port", 0, "main HTTP port (0 = pick a free port)")
	f.StringVar(&cfg.Model, "model", cfg.Model, "served model id (/v1/models; vLLM rejects other model names with 404)")
	f.StringVar(&cfg.EngineID, "engine-id", "", "KV engine id, vLLM remote_engine_id (default: random UUID)")
	f.IntVar(&cfg.BootstrapPort, "bootstrap-port", 0,
		"bootstrap server port of a SGLang prefill or vLLM Mooncake prefill (0 = pick a free port; ignored by other roles)")
	f.StringVar(&cfg.KVConnector, "kv-connector", cfg.KVConnector, `vLLM KV connector: "nixl", "mooncake" or "moriio" (ignored for sglang)`)
	f.StringVar(&cfg.MoRIIOMode, "moriio-mode", sim.MoRIIOModeWrite, `MoRI-IO mode: "read" or "write" (with --kv-connector moriio)`)
	f.IntVar(&cfg.MoRIIOHandshakePort, "moriio-handshake-port", 6301, "MoRI-IO handshake_port listener (0 = pick a free port)")
	f.IntVar(&cfg.MoRIIONotifyPort, "moriio-notify-port", 61005, "MoRI-IO notify_port listener (0 = pick a free port)")
	f.Float64Var(&cfg.PrefillTokensPerS, "prefill-tokens-per-s", 0,
		"prefill speed in uncached prompt tokens per second, shared by concurrent prefills (0 = instant)")
	f.Float64Var(&prefillFixedMS, "prefill-fixed-ms", 0, "fixed cost of every prefill computation, in milliseconds")
	f.IntVar(&cfg.PrefillChunkTokens, "prefill-chunk-tokens", 0,
		"per-step prefill token budget of the batching model, in tokens (0 = 2048; vLLM max_num_batched_tokens, SGLang chunked_prefill_size)")
	f.Float64Var(&transferMSPerBlock, "kv-transfer-ms-per-block", 0,
		"decode: time to receive one KV block through a handoff, in milliseconds, for blocks not already in its cache")
	f.IntVar(&cfg.BlockSize, "block-size", 0,
		"KV-cache block (page) size in tokens (0 = the engine's default: vLLM 16, SGLang 1; gRPC: also the reported page_size unless --page-size is set)")
	f.IntVar(&cfg.KVCacheBlocks, "kv-cache-blocks", 0,
		"KV-cache capacity in blocks (0 = 1048576 tokens' worth); unheld blocks are evicted LRU beyond it")
	f.StringVar(&cfg.TokenizerPath, "tokenizer-path", "",
		"directory with a HuggingFace tokenizer.json: HTTP sims tokenize text prompts with it (empty: one token per whitespace-separated word); gRPC: the directory GetTokenizer zips")
	f.Float64Var(&itlMS, "itl-ms", 0, "inter-token latency per output token, in milliseconds")
	f.Float64Var(&itlPerRunningMS, "itl-per-running-ms", 0,
		"extra inter-token latency per running request, in milliseconds (ITL = itl-ms + this × running)")
	f.IntVar(&cfg.MaxRunning, "max-running", cfg.MaxRunning,
		"continuous-batching width in requests; excess requests queue (0 = unlimited)")
	f.Var(seconds{&cfg.HandoffTimeout}, "handoff-timeout",
		"how long a leg waits for its peer and unconsumed KV is kept (duration like 300ms/30s, or seconds; SGLang's own is 300s)")
	f.IntVar(&cfg.MaxModelLen, "max-model-len", cfg.MaxModelLen, "context length in tokens; longer prompts, and max_tokens beyond what is left of it, get the engine's 400")
	f.BoolVar(&prefixCache, "prefix-cache", false, "no effect: every instance has a prefix-caching KV cache")
	_ = f.MarkDeprecated("prefix-cache", "the KV-cache model is always on (see --block-size, --kv-cache-blocks)")
	f.IntVar(&cfg.MaxRunningRequests, "max-running-requests", cfg.MaxRunningRequests,
		"max_running_requests reported by SGLang /get_server_info and /server_info, in requests")
	f.StringArrayVar(&cfg.Faults, "fault", nil,
		"per-instance fault <kind>[:<arg>] applied to every inference request; repeatable (ms for slow-first-byte/delay-body, tokens for die-after, HTTP code for status)")
	f.Var(seconds{&cfg.HangMax}, "hang-max", "upper bound of the hang fault (duration, or seconds)")
	f.StringVar(&cfg.KVEventsConfig, "kv-events-config", "",
		`the engines' KV event publisher config, JSON with vLLM's keys and defaults, e.g. {"enable_kv_cache_events":true,"publisher":"zmq","endpoint":"tcp://*:5557","replay_endpoint":"tcp://*:5558","topic":"kv-events"} (SGLang: "publisher":"zmq" enables; empty = no KV events)`)
	f.BoolVar(&cfg.KVEventsArray, "kv-events-array", false, "publish KV events in the legacy tagged-array msgpack shape instead of tagged maps")
	return cmd
}

// kvEventsSuffix is the ready line's tail when KV events are published:
// " kv_events=EP[,EP…]" (one PUB endpoint per DP rank, rank order) and
// " kv_events_replay=EP[,EP…]" when replay is on; "" otherwise.
func kvEventsSuffix(set *kvevents.Set) string {
	var pub, rep []string
	for r := range set.Len() {
		pub = append(pub, set.Rank(r).Endpoint())
		if ep := set.Rank(r).ReplayEndpoint(); ep != "" {
			rep = append(rep, ep)
		}
	}
	out := ""
	if len(pub) > 0 {
		out += " kv_events=" + strings.Join(pub, ",")
	}
	if len(rep) > 0 {
		out += " kv_events_replay=" + strings.Join(rep, ",")
	}
	return out
}

// run starts n instances of the simulator, writes the ready lines to w and serves until
// parent ends or a SIGINT/SIGTERM arrives; it returns Close's error.
func run(parent context.Context, cfg sim.Config, n int, w io.Writer) error {
	cfgs := instanceConfigs(cfg, n)
	if t := cfgs[0].SideChannel; t != nil {
		defer t.CloseIdleConnections() // the shared transport outlives every instance
	}
	return serveAll(parent, len(cfgs), func(i int) (closer, string, error) {
		srv, err := sim.Start(cfgs[i])
		if err != nil {
			return nil, "", err
		}
		c := srv.Config()
		line := fmt.Sprintf("smg-sim %s %s listening on %s bootstrap=%d engine_id=%s", c.Engine, c.Role, srv.URL(), srv.BootstrapPort(), srv.EngineID())
		if hs, nt := srv.MoRIIOPorts(); hs != 0 {
			line += fmt.Sprintf(" moriio_handshake=%d moriio_notify=%d", hs, nt)
		}
		return srv, line + kvEventsSuffix(srv.KVEvents()), nil
	}, w)
}
