package grpcsim

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// defaultKVCacheTokens is the default KV-cache capacity in tokens (the HTTP simulator's
// sim.DefaultKVCacheTokens).
const defaultKVCacheTokens = 1 << 20

// Engines, roles and vLLM connector names accepted in [Config] (and by smg-sim with
// --transport grpc).
const (
	EngineSGLang     = "sglang"
	EngineVLLM       = "vllm"
	EngineTokenSpeed = "tokenspeed"

	RolePrefill = "prefill"
	RoleDecode  = "decode"
	RoleEncode  = "encode"

	ConnectorNixl     = "NixlConnector"
	ConnectorMooncake = "MooncakeConnector"
	ConnectorMulti    = "MultiConnector"
)

// Versions the SGLang and TokenSpeed simulators report (sglang_version, tokenspeed_version);
// vLLM reports none over gRPC (grpc.md §1.2).
const (
	SGLangVersion     = "0.5.16"
	TokenSpeedVersion = "0.3.0"
)

// vLLM servicer versions for [Config.VLLMServicer]: VLLMServicerPublished is the SMG vLLM
// servicer current vLLM releases ship (GetServerInfo fields 1-10 only, no media_refs or
// media_identity); VLLMServicer111 is the v1.11-era servicer that adds GetServerInfo fields
// 11-17 (kv_cache_dtype, block_size, attention_backend, model_dtype, pairing_protocol,
// mm_processor, mm_media_ref_schemes), GenerateRequest.media_refs and
// GenerateComplete.media_identity (grpc.md §1.1).
const (
	VLLMServicerPublished = "1.9"
	VLLMServicer111       = "1.11"
)

// Config describes one simulated gRPC engine instance. Zero values take the defaults noted.
type Config struct {
	// SideChannel, when set, is the HTTP transport of a decode's KV side-channel requests,
	// shared with the other instances of the process (smg-sim --instances): one bounded idle
	// pool instead of one per instance, whose idle connections to every prefill would
	// exhaust the process's descriptors. Nil: the instance's own (NewSideChannelTransport).
	SideChannel *http.Transport
	// Engine is "sglang", "vllm" or "tokenspeed" (required).
	Engine string
	// Role is "prefill", "decode" or "encode" (encode: TokenSpeed only; it serves the
	// TokenSpeedEncoder service and accepts every assignment).
	Role string
	// Host is the listen address of every listener; default "127.0.0.1".
	Host string
	// Port is the gRPC port; 0 picks a free one.
	Port int
	// BootstrapPort is the prefill's KV side channel (SGLang/TokenSpeed bootstrap server,
	// vLLM NIXL side channel and Mooncake bootstrap server); 0 picks a free one. Only a
	// prefill runs it.
	BootstrapPort int
	// StatsPort serves GET /sim/stats and POST /sim/reset over HTTP; 0 picks a free one.
	StatsPort int
	// Model is the served model name; default "sim-model".
	Model string
	// TokenizerPath is a directory GetTokenizer zips; "" = GetTokenizer answers
	// FAILED_PRECONDITION, as a servicer without a tokenizer path does.
	TokenizerPath string
	// EngineID is the vLLM KV engine id (kv_engine_id); default random.
	EngineID string
	// KVConnector is the vLLM kv_transfer_config connector: NixlConnector (default),
	// MooncakeConnector, or MultiConnector wrapping MultiChildren. Ignored by other engines.
	KVConnector string
	// MultiChildren are the child connectors of a MultiConnector (default one NixlConnector);
	// MultiChildEngineID is the children's engine_id ("" = the parent's is reported).
	MultiChildren      []string
	MultiChildEngineID string
	// KVRole is reported as kv_role; default kv_producer for a prefill, kv_consumer for a
	// decode.
	KVRole string
	// TransferBackend is SGLang/TokenSpeed disaggregation_transfer_backend; default "mooncake".
	TransferBackend string
	// Layout facts reported for pairing (vLLM: block_size for PageSize). PageSize is also
	// the KV-cache model's block size. Defaults: "auto",
	// 16 (SGLang page_size 1 is the engine's own default, but 16 keeps the legs comparable),
	// "flashinfer" (SGLang/TokenSpeed) / "FLASH_ATTN" (vLLM), "torch.bfloat16" (vLLM only).
	KVCacheDtype, AttentionBackend, ModelDtype string
	PageSize                                   int
	// PairingProtocol is the servicer's SMG_PAIRING_PROTOCOL (trimmed; "" = unset).
	PairingProtocol string
	// MaxRunningRequests (SGLang server_args max_running_requests) and MaxNumSeqs
	// (TokenSpeed server_args max_num_seqs) are the reported running windows; 0 = the
	// engine does not report one. Defaults 2048 and 256.
	MaxRunningRequests, MaxNumSeqs int
	// MaxModelLen is the context length (server_args context_length, GetModelInfo
	// max_context_length); longer prompts get INVALID_ARGUMENT. Default 32768.
	MaxModelLen int
	// VLLMServicer is the SMG vLLM servicer version simulated: "" or VLLMServicerPublished
	// (default: what a real vLLM sends today), or VLLMServicer111 for the newer fields.
	VLLMServicer string
	// SGLangDPRankPin makes an SGLang instance honour GenerateRequest.data_parallel_rank.
	// SGLang's servicer never reads it (the scheduler places the request; here on DPRank),
	// so by default a pin has no effect, as on a real engine.
	SGLangDPRankPin bool
	// DPSize and DPRank: with DPSize > 1 (at most 64) the engine reports dp_size DPSize
	// and a leg's data_parallel_rank pin must be a rank below it. A TokenSpeed leg lands on
	// rank room % DPSize, as TokenSpeed's DP controller places it; a TokenSpeed prefill leg
	// pinned to another rank is an error. DPRank is the rank of an unpinned SGLang or vLLM
	// leg.
	DPSize, DPRank int
	// DefaultSamplingParams is reported as GetModelInfo default_sampling_params_json (a
	// JSON object, e.g. {"temperature":0.7}); "" = none.
	DefaultSamplingParams string
	// DefaultMaxTokens is used when the request sets no max tokens; default 16.
	DefaultMaxTokens int
	// ITL is the delay between output tokens; the effective value is ITL + ITLPerRunning ×
	// (Generate RPCs running). 0 = none.
	ITL, ITLPerRunning time.Duration
	// PrefillTokensPerS, PrefillFixed and PrefillChunkTokens are the prefill time model
	// (package test/sim/compute): PrefillFixed + uncached tokens / PrefillTokensPerS, shared
	// by concurrent prefills in chunks of PrefillChunkTokens (default 2048). 0 = instant.
	PrefillTokensPerS  float64
	PrefillFixed       time.Duration
	PrefillChunkTokens int
	// KVTransferPerBlock is a decode's time to receive one KV block through a handoff,
	// charged for the blocks it did not already hold; 0 = instant.
	KVTransferPerBlock time.Duration
	// MaxRunning is the continuous-batching width: at most this many Generate RPCs compute
	// at once, the rest queue (Stats.Waiting, Stats.QueueMS). 0 = unlimited.
	MaxRunning int
	// KVCacheBlocks is the KV-cache capacity in blocks of PageSize tokens; default
	// sim.DefaultKVCacheTokens / PageSize, more than any test fills.
	KVCacheBlocks int
	// KVEventSink, when set, receives the KV cache's events in the order the cache changed.
	KVEventSink kvcache.Sink
	// HandoffTimeout bounds a leg's wait for its peer and how long unclaimed KV is kept;
	// default 30s.
	HandoffTimeout time.Duration
	// Faults are per-instance faults "<kind>[:<arg>]" (see [ParseFault]).
	Faults []string
	// HangMax bounds the hang fault; default 60s.
	HangMax time.Duration
	// LanguageModelOnly is vLLM --language-model-only: GetModelInfo reports
	// supports_vision=false and a request with media tensors, placeholders or references is
	// INVALID_ARGUMENT (hashes only).
	LanguageModelOnly bool
	// KVEventsConfig is the engines' --kv-events-config JSON, parsed by
	// kvevents.ParseConfig in vLLM's dialect for vLLM and SGLang's for SGLang and
	// TokenSpeed (whose servicer reads SGLang-shaped batches, attn_dp_rank); "" publishes
	// no KV events. When enabled, every DP rank (DPSize ranks, at least one) runs a ZMQ PUB
	// (and replay ROUTER) publisher on port + rank, bound to Host when the endpoint's host
	// is "*", and SubscribeKvEvents streams rank DPRank.
	KVEventsConfig string
	// KVEventsArray selects the legacy tagged-array event payloads instead of the
	// current tagged maps (kvevents.EncodingVLLMArray / EncodingSGLangArray).
	KVEventsArray bool

	kvEvents kvevents.Config // KVEventsConfig parsed by withDefaults
}

func (c Config) withDefaults() (Config, error) {
	if c.Host == "" {
		c.Host = "127.0.0.1"
	}
	if c.Model == "" {
		c.Model = "sim-model"
	}
	if c.EngineID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		c.EngineID = "sim-" + hex.EncodeToString(b[:])
	}
	if c.KVConnector == "" {
		c.KVConnector = ConnectorNixl
	}
	if c.KVConnector == ConnectorMulti && len(c.MultiChildren) == 0 {
		c.MultiChildren = []string{ConnectorNixl}
	}
	if c.KVRole == "" {
		c.KVRole = map[string]string{RolePrefill: "kv_producer", RoleDecode: "kv_consumer"}[c.Role]
	}
	if c.TransferBackend == "" {
		c.TransferBackend = "mooncake"
	}
	if c.KVCacheDtype == "" {
		c.KVCacheDtype = "auto"
	}
	if c.PageSize == 0 {
		c.PageSize = 16
	}
	if c.AttentionBackend == "" {
		c.AttentionBackend = "flashinfer"
		if c.Engine == EngineVLLM {
			c.AttentionBackend = "FLASH_ATTN"
		}
	}
	if c.ModelDtype == "" && c.Engine == EngineVLLM {
		c.ModelDtype = "torch.bfloat16"
	}
	c.PairingProtocol = strings.TrimSpace(c.PairingProtocol)
	if c.MaxRunningRequests == 0 {
		c.MaxRunningRequests = 2048
	}
	if c.MaxNumSeqs == 0 {
		c.MaxNumSeqs = 256
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = 32768
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = 16
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = 30 * time.Second
	}
	if c.HangMax == 0 {
		c.HangMax = 60 * time.Second
	}
	if c.KVCacheBlocks == 0 && c.PageSize > 0 {
		c.KVCacheBlocks = (defaultKVCacheTokens + c.PageSize - 1) / c.PageSize
	}
	if c.PageSize < 1 || c.KVCacheBlocks < 1 || c.MaxRunning < 0 || c.PrefillTokensPerS < 0 || c.PrefillFixed < 0 ||
		c.PrefillChunkTokens < 0 || c.KVTransferPerBlock < 0 || c.ITL < 0 || c.ITLPerRunning < 0 {
		return c, fmt.Errorf("grpcsim: negative latency or size setting (page size %d, kv cache blocks %d)", c.PageSize, c.KVCacheBlocks)
	}
	switch c.VLLMServicer {
	case "", VLLMServicerPublished, VLLMServicer111:
	default:
		return c, fmt.Errorf("grpcsim: vllm servicer %q: want %s or %s", c.VLLMServicer, VLLMServicerPublished, VLLMServicer111)
	}
	switch c.Engine {
	case EngineSGLang, EngineVLLM, EngineTokenSpeed:
	default:
		return c, fmt.Errorf("grpcsim: engine %q: want sglang, vllm or tokenspeed", c.Engine)
	}
	switch c.Role {
	case RolePrefill, RoleDecode:
	case RoleEncode:
		if c.Engine != EngineTokenSpeed {
			return c, fmt.Errorf("grpcsim: role encode needs engine tokenspeed (got %s)", c.Engine)
		}
	default:
		return c, fmt.Errorf("grpcsim: role %q: want prefill, decode or encode", c.Role)
	}
	if c.Engine == EngineVLLM {
		switch c.KVConnector {
		case ConnectorNixl, ConnectorMooncake, ConnectorMulti:
		default:
			return c, fmt.Errorf("grpcsim: kv connector %q: want NixlConnector, MooncakeConnector or MultiConnector", c.KVConnector)
		}
	}
	if c.DPSize < 0 || c.DPSize > maxDPSize || c.DPRank < 0 || (c.DPSize > 1 && c.DPRank >= c.DPSize) {
		return c, fmt.Errorf("grpcsim: dp rank %d out of range for dp size %d", c.DPRank, c.DPSize)
	}
	for _, p := range []int{c.Port, c.BootstrapPort, c.StatsPort} {
		if p < 0 || p > 65535 {
			return c, fmt.Errorf("grpcsim: port %d out of range", p)
		}
	}
	for _, f := range c.Faults {
		if _, err := ParseFault(f); err != nil {
			return c, err
		}
	}
	kv, err := kvevents.ParseConfig(c.kvEventsDialect(), c.KVEventsConfig)
	if err != nil {
		return c, fmt.Errorf("grpcsim: %w", err)
	}
	c.kvEvents = kv
	return c, nil
}

// kvEventsDialect is the engine whose --kv-events-config rules and payload shape the
// instance follows: vLLM's for vLLM, SGLang's for SGLang and TokenSpeed.
func (c Config) kvEventsDialect() string {
	if c.Engine == EngineVLLM {
		return kvevents.EngineVLLM
	}
	return kvevents.EngineSGLang
}

// connectorReport is what GetServerInfo reports as kv_connector and kv_engine_id, with
// SMG's servicer reduction of a MultiConnector (grpc.md §1.9): exactly one NIXL or Mooncake
// child is reported as that child, with the child's engine id or else the parent's; any
// other MultiConnector is reported unchanged.
func (c Config) connectorReport() (connector, engineID string) {
	if c.KVConnector != ConnectorMulti {
		return c.KVConnector, c.EngineID
	}
	var found []string
	for _, ch := range c.MultiChildren {
		if ch == ConnectorNixl || ch == ConnectorMooncake {
			found = append(found, ch)
		}
	}
	if len(found) != 1 {
		return ConnectorMulti, c.EngineID
	}
	id := c.MultiChildEngineID
	if id == "" {
		id = c.EngineID
	}
	return found[0], id
}

// transport is the handoff the instance performs: "nixl" or "mooncake" for vLLM (the
// effective connector), "room" for SGLang and TokenSpeed, "" for a vLLM passthrough
// MultiConnector.
func (c Config) transport() string {
	switch c.Engine {
	case EngineVLLM:
		switch conn, _ := c.connectorReport(); conn {
		case ConnectorNixl:
			return "nixl"
		case ConnectorMooncake:
			return "mooncake"
		}
		return ""
	}
	return "room"
}

// vllmNewer reports whether the instance simulates the v1.11-era vLLM servicer
// (VLLMServicer111).
func (c Config) vllmNewer() bool { return c.VLLMServicer == VLLMServicer111 }
