package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/pflag"

	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// grpcFlags are the flags only --transport grpc uses; the shared flags (engine, role,
// host, port, model, engine id, bootstrap port, connector, windows, faults, timeouts) come
// from sim.Config.
type grpcFlags struct {
	statsPort, maxNumSeqs, dpSize, dpRank, pageSize                     int
	pairingProtocol, multiChildren, multiChildID                        string
	kvCacheDtype, attentionBackend, modelDtype, transferBackend, kvRole string
	vllmServicer                                                        string
	languageModelOnly, sglangDPRankPin                                  bool
}

func (g *grpcFlags) register(f *pflag.FlagSet) {
	f.IntVar(&g.statsPort, "stats-port", 0, "gRPC: HTTP port of GET /sim/stats and POST /sim/reset (0 = pick a free port)")
	f.IntVar(&g.maxNumSeqs, "max-num-seqs", 0, "gRPC TokenSpeed: running window reported as server_args max_num_seqs (default 256)")
	f.StringVar(&g.pairingProtocol, "pairing-protocol", "", "gRPC: the servicer's SMG_PAIRING_PROTOCOL (trimmed; empty = unset)")
	f.IntVar(&g.dpSize, "dp-size", 0, "attention-DP size; gRPC: with >1 a TokenSpeed room whose room % dp-size differs from --dp-rank is an error; HTTP SGLang: /server_info dp_size, every leg needs routed_dp_rank below it")
	f.StringVar(&g.vllmServicer, "vllm-servicer", grpcsim.VLLMServicerPublished, "gRPC vLLM: SMG servicer version simulated: "+grpcsim.VLLMServicerPublished+
		" (published: GetServerInfo fields 1-10, no media_refs/media_identity) or "+grpcsim.VLLMServicer111+" (adds fields 11-17, media_refs, media_identity)")
	f.BoolVar(&g.sglangDPRankPin, "sglang-dp-rank-pin", false, "gRPC SGLang: honour GenerateRequest.data_parallel_rank (no published SGLang servicer reads it; default: ignored, legs land on --dp-rank)")
	f.IntVar(&g.dpRank, "dp-rank", 0, "gRPC: this instance's DP rank")
	f.BoolVar(&g.languageModelOnly, "language-model-only", false, "gRPC vLLM: report supports_vision=false and take expanded ids and per-item hashes only (media tensors are INVALID_ARGUMENT)")
	f.StringVar(&g.multiChildren, "multi-children", "", "gRPC vLLM MultiConnector: comma-separated child connectors (default NixlConnector)")
	f.StringVar(&g.multiChildID, "multi-child-engine-id", "", "gRPC vLLM MultiConnector: the children's engine_id (empty: the parent's)")
	f.StringVar(&g.kvCacheDtype, "kv-cache-dtype", "", "gRPC: kv_cache_dtype reported for pairing (default auto)")
	f.IntVar(&g.pageSize, "page-size", 0, "gRPC: page_size (vLLM block_size) reported for pairing and used as the KV-cache block size (default --block-size, else 16)")
	f.StringVar(&g.attentionBackend, "attention-backend", "", "gRPC: attention_backend reported for pairing")
	f.StringVar(&g.modelDtype, "model-dtype", "", "gRPC vLLM: model_dtype reported for pairing (default torch.bfloat16)")
	f.StringVar(&g.transferBackend, "transfer-backend", "", "gRPC SGLang/TokenSpeed: disaggregation_transfer_backend (default mooncake)")
	f.StringVar(&g.kvRole, "kv-role", "", "gRPC vLLM: kv_role (default kv_producer/kv_consumer by role)")
}

// grpcConfig maps the shared flags and the gRPC-only ones onto a grpcsim.Config. The vLLM
// connector accepts the HTTP sim's short names (nixl, mooncake) and the engine's names
// (NixlConnector, MooncakeConnector, MultiConnector).
func grpcConfig(c sim.Config, g grpcFlags) grpcsim.Config {
	conn := c.KVConnector
	switch strings.ToLower(conn) {
	case "nixl", "nixlconnector":
		conn = grpcsim.ConnectorNixl
	case "mooncake", "mooncakeconnector":
		conn = grpcsim.ConnectorMooncake
	case "multi", "multiconnector":
		conn = grpcsim.ConnectorMulti
	}
	var children []string
	for _, ch := range strings.Split(g.multiChildren, ",") {
		if ch = strings.TrimSpace(ch); ch != "" {
			children = append(children, ch)
		}
	}
	page := g.pageSize
	if page == 0 {
		page = c.BlockSize
	}
	return grpcsim.Config{
		Engine: c.Engine, Role: c.Role, Host: c.Host, Port: c.Port, BootstrapPort: c.BootstrapPort,
		StatsPort: g.statsPort, Model: c.Model, TokenizerPath: c.TokenizerPath, EngineID: c.EngineID,
		KVConnector: conn, MultiChildren: children, MultiChildEngineID: g.multiChildID, KVRole: g.kvRole,
		TransferBackend: g.transferBackend, KVCacheDtype: g.kvCacheDtype, AttentionBackend: g.attentionBackend,
		ModelDtype: g.modelDtype, PageSize: page, PairingProtocol: g.pairingProtocol,
		MaxRunningRequests: c.MaxRunningRequests, MaxNumSeqs: g.maxNumSeqs, MaxModelLen: c.MaxModelLen,
		DPSize: g.dpSize, DPRank: g.dpRank, ITL: c.ITL, ITLPerRunning: c.ITLPerRunning, HandoffTimeout: c.HandoffTimeout,
		PrefillTokensPerS: c.PrefillTokensPerS, PrefillFixed: c.PrefillFixed, PrefillChunkTokens: c.PrefillChunkTokens,
		KVTransferPerBlock: c.KVTransferPerBlock, MaxRunning: c.MaxRunning, KVCacheBlocks: c.KVCacheBlocks,
		Faults: c.Faults, HangMax: c.HangMax, LanguageModelOnly: g.languageModelOnly,
		VLLMServicer: g.vllmServicer, SGLangDPRankPin: g.sglangDPRankPin,
		KVEventsConfig: c.KVEventsConfig, KVEventsArray: c.KVEventsArray,
	}
}

// runGRPC starts n instances of the gRPC simulator, writes the ready lines and serves
// until parent ends or SIGINT/SIGTERM arrives.
func runGRPC(parent context.Context, cfg grpcsim.Config, n int, w io.Writer) error {
	cfgs := grpcInstanceConfigs(cfg, n)
	if t := cfgs[0].SideChannel; t != nil {
		defer t.CloseIdleConnections() // the shared transport outlives every instance
	}
	return serveAll(parent, len(cfgs), func(i int) (closer, string, error) {
		srv, err := grpcsim.Start(cfgs[i])
		if err != nil {
			return nil, "", err
		}
		c := srv.Config()
		return srv, fmt.Sprintf("smg-sim %s %s listening on %s bootstrap=%d stats=%s engine_id=%s%s",
			c.Engine, c.Role, srv.URL(), srv.BootstrapPort(), srv.StatsURL(), c.EngineID, kvEventsSuffix(srv.KVEvents())), nil
	}, w)
}
