package sim

import (
	"fmt"
	"net/http"
	"time"

	"github.com/smg-go/smg/test/sim/kvcache"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// Engine, role and connector names accepted in [Config] (and by the smg-sim flags).
const (
	EngineSGLang = "sglang"
	EngineVLLM   = "vllm"

	RolePrefill = "prefill"
	RoleDecode  = "decode"

	ConnectorNixl     = "nixl"
	ConnectorMooncake = "mooncake"
	ConnectorMoRIIO   = "moriio"

	// MoRIIOModeRead and MoRIIOModeWrite are the MoRI-IO modes ([Config].MoRIIOMode).
	MoRIIOModeRead  = "read"
	MoRIIOModeWrite = "write"
)

// VLLMVersion is what a vLLM instance reports on GET /version; SGLangVersion is the
// "version" of SGLang's /get_server_info.
const (
	VLLMVersion   = "0.11.0"
	SGLangVersion = "0.5.3"
)

// Config describes one simulated engine instance. Zero values mean "default" where noted;
// [DefaultConfig] returns the defaults explicitly. Durations are Go durations.
type Config struct {
	// SideChannel, when set, is the HTTP transport of this instance's KV side-channel
	// requests (NIXL pulls, Mooncake fetches, bootstrap claims), shared with the other
	// instances of the process (smg-sim --instances): one bounded idle pool instead of one
	// per instance, whose idle connections to every peer would exhaust the process's
	// descriptors. Nil: the instance's own transport.
	SideChannel *http.Transport
	// Engine is "sglang" or "vllm" (required).
	Engine string
	// Role is "prefill" or "decode" (required).
	Role string
	// Host is the listen address of every listener; default "127.0.0.1".
	Host string
	// Port is the main HTTP port; 0 picks a free port.
	Port int
	// Model is the served model id (/v1/models); default "sim-model". A vLLM instance rejects
	// a request naming another model with 404 NotFoundError.
	Model string
	// EngineID is the KV engine id (vLLM remote_engine_id, checked by Mooncake fetches);
	// default a random UUID-like string.
	EngineID string
	// BootstrapPort is the bootstrap listener of a SGLang prefill or a vLLM Mooncake prefill;
	// 0 picks a free port. Ignored by roles without a bootstrap server.
	BootstrapPort int
	// KVConnector is the vLLM connector, "nixl" (default), "mooncake" or "moriio". Ignored
	// for SGLang.
	KVConnector string
	// MoRIIOMode is the MoRI-IO mode, "read" or "write" (default, as the engine's); used
	// with KVConnector "moriio".
	MoRIIOMode string
	// MoRIIOHandshakePort and MoRIIONotifyPort are the MoRI-IO side-channel listeners
	// (the engine's handshake_port and notify_port, smg-sim defaults 6301 and 61005); 0
	// picks a free port. Used with KVConnector "moriio".
	MoRIIOHandshakePort, MoRIIONotifyPort int
	// PrefillTokensPerS is the instance's prefill speed in uncached prompt tokens per
	// second, shared by concurrent prefills (see package test/sim/compute); 0 means
	// instant. Prefill time = PrefillFixed + uncached tokens / PrefillTokensPerS, longer
	// while other prefills run.
	PrefillTokensPerS float64
	// PrefillFixed is the fixed cost of every prefill computation (a request that computes
	// at least one prompt token); 0 means none.
	PrefillFixed time.Duration
	// PrefillChunkTokens is the per-step prefill token budget of the batching model
	// (vLLM max_num_batched_tokens, SGLang chunked_prefill_size); default 2048.
	PrefillChunkTokens int
	// KVTransferPerBlock is the time a decode spends receiving one KV block through a
	// handoff, charged only for blocks not already in its own cache; 0 means instant.
	KVTransferPerBlock time.Duration
	// ITL is the inter-token latency per output token; the effective value is
	// ITL + ITLPerRunning × (requests running). 0 means no delay.
	ITL, ITLPerRunning time.Duration
	// MaxRunning is the continuous-batching width: at most this many requests compute at a
	// time; the rest queue (Stats.Waiting, Stats.QueueMS). Waiting for a handoff peer does
	// not take a slot. 0 means unlimited.
	MaxRunning int
	// BlockSize is the KV-cache block (page) size in tokens; default 16 for vLLM
	// (--block-size) and 1 for SGLang (--page-size).
	BlockSize int
	// KVCacheBlocks is the KV-cache capacity in blocks; default DefaultKVCacheTokens /
	// BlockSize (rounded up), more than any test fills.
	KVCacheBlocks int
	// KVEventSink, when set, receives the KV cache's events (BlockStored, BlockRemoved,
	// AllBlocksCleared) in the order the cache changed.
	KVEventSink kvcache.Sink
	// TokenizerPath is a directory holding a HuggingFace tokenizer.json: text prompts are
	// tokenized with it. "" = the simulator's whitespace stand-in (see [PromptTokens]).
	TokenizerPath string
	// HandoffTimeout bounds how long a leg waits for its peer (a room claim, the KV, a
	// Mooncake fetch) and how long unconsumed KV is kept; default 30s.
	HandoffTimeout time.Duration
	// MaxModelLen is the context length in tokens; longer prompts, and a max_tokens larger
	// than what the prompt leaves of it, get the engine's 400.
	// Default 32768.
	MaxModelLen int
	// MaxRunningRequests is reported as max_running_requests by SGLang /get_server_info and
	// /server_info; default 2048 (it does not limit anything, see MaxRunning).
	MaxRunningRequests int
	// DPSize is the data-parallel size SGLang's /server_info reports as dp_size (default 1).
	// With DPSize > 1 every SGLang leg must carry routed_dp_rank in [0, DPSize) (and a
	// decode's disagg_prefill_dp_rank, when sent, a rank >= 0), else it is answered 400;
	// Stats.DPRankRequests counts the legs per routed rank.
	DPSize int
	// Faults are per-instance faults "<kind>[:<arg>]" applied to every inference request
	// (see [ParseFault] for the kinds).
	Faults []string
	// HangMax bounds the "hang" fault; default 60s.
	HangMax time.Duration
	// KVEventsConfig is the engines' --kv-events-config JSON (vLLM's keys and defaults;
	// parsed by kvevents.ParseConfig in the engine's dialect: vLLM needs
	// enable_kv_cache_events, SGLang "publisher":"zmq"); "" publishes no KV events. When
	// enabled, every DP rank (DPSize ranks for SGLang, one for vLLM) runs a ZMQ PUB (and
	// replay ROUTER) publisher on port + rank, bound to Host when the endpoint's host is
	// "*"; [Server.KVEventSink] is a rank's kvcache.Sink.
	KVEventsConfig string
	// KVEventsArray selects the legacy tagged-array event payloads instead of the current
	// tagged maps (kvevents.EncodingVLLMArray / EncodingSGLangArray).
	KVEventsArray bool

	kvEvents kvevents.Config // KVEventsConfig parsed by withDefaults
}

// kvEventRanks is the number of DP ranks publishing KV events: DPSize for SGLang (its
// attention-DP ranks), one for vLLM (the HTTP sim models no vLLM DP).
func (c Config) kvEventRanks() int {
	if c.Engine == EngineSGLang {
		return max(c.DPSize, 1)
	}
	return 1
}

// DefaultKVCacheTokens is the default KV-cache capacity in tokens (Config.KVCacheBlocks =
// this / BlockSize): 1,048,576 tokens, far more than a test or benchmark run holds at once,
// so nothing is evicted unless a smaller capacity is asked for.
const DefaultKVCacheTokens = 1 << 20

// Default block sizes: vLLM's DEFAULT_BLOCK_SIZE (vllm/config/cache.py) and SGLang's
// default --page-size (shared/reference/kv-routing.md §1.6, §2.3).
const (
	VLLMBlockSize   = 16
	SGLangBlockSize = 1
)

// DefaultConfig returns a SGLang decode on 127.0.0.1 with a free port and the defaults listed
// on [Config]: model "sim-model", nixl, no prefill or ITL delay, MaxRunning 256,
// HandoffTimeout 30s, MaxModelLen 32768, MaxRunningRequests 2048, HangMax 60s.
func DefaultConfig() Config {
	return Config{
		Engine:             EngineSGLang,
		Role:               RoleDecode,
		Host:               "127.0.0.1",
		Model:              "sim-model",
		KVConnector:        ConnectorNixl,
		MaxRunning:         256,
		HandoffTimeout:     30 * time.Second,
		MaxModelLen:        32768,
		MaxRunningRequests: 2048,
		HangMax:            60 * time.Second,
	}
}

// withDefaults fills zero fields and validates. Errors name the offending field.
func (c Config) withDefaults() (Config, error) {
	d := DefaultConfig()
	if c.Host == "" {
		c.Host = d.Host
	}
	if c.Model == "" {
		c.Model = d.Model
	}
	if c.KVConnector == "" {
		c.KVConnector = d.KVConnector
	}
	if c.HandoffTimeout == 0 {
		c.HandoffTimeout = d.HandoffTimeout
	}
	if c.MaxModelLen == 0 {
		c.MaxModelLen = d.MaxModelLen
	}
	if c.MaxRunningRequests == 0 {
		c.MaxRunningRequests = d.MaxRunningRequests
	}
	if c.HangMax == 0 {
		c.HangMax = d.HangMax
	}
	if c.EngineID == "" {
		c.EngineID = randomID()
	}
	if c.BlockSize == 0 {
		c.BlockSize = SGLangBlockSize
		if c.Engine == EngineVLLM {
			c.BlockSize = VLLMBlockSize
		}
	}
	if c.KVCacheBlocks == 0 && c.BlockSize > 0 {
		c.KVCacheBlocks = (DefaultKVCacheTokens + c.BlockSize - 1) / c.BlockSize
	}
	switch c.Engine {
	case EngineSGLang, EngineVLLM:
	default:
		return c, fmt.Errorf("sim: engine %q: want %q or %q", c.Engine, EngineSGLang, EngineVLLM)
	}
	switch c.Role {
	case RolePrefill, RoleDecode:
	default:
		return c, fmt.Errorf("sim: role %q: want %q or %q", c.Role, RolePrefill, RoleDecode)
	}
	switch c.KVConnector {
	case ConnectorNixl, ConnectorMooncake, ConnectorMoRIIO:
	default:
		return c, fmt.Errorf("sim: kv connector %q: want %q, %q or %q", c.KVConnector, ConnectorNixl, ConnectorMooncake, ConnectorMoRIIO)
	}
	if c.KVConnector == ConnectorMoRIIO {
		switch c.MoRIIOMode {
		case "":
			c.MoRIIOMode = MoRIIOModeWrite
		case MoRIIOModeRead, MoRIIOModeWrite:
		default:
			return c, fmt.Errorf("sim: moriio mode %q: want %q or %q", c.MoRIIOMode, MoRIIOModeRead, MoRIIOModeWrite)
		}
	}
	if c.Port < 0 || c.Port > 65535 || c.BootstrapPort < 0 || c.BootstrapPort > 65535 ||
		c.MoRIIOHandshakePort < 0 || c.MoRIIOHandshakePort > 65535 || c.MoRIIONotifyPort < 0 || c.MoRIIONotifyPort > 65535 {
		return c, fmt.Errorf("sim: port %d / bootstrap port %d / moriio ports %d, %d out of range", c.Port, c.BootstrapPort, c.MoRIIOHandshakePort, c.MoRIIONotifyPort)
	}
	if c.PrefillTokensPerS < 0 || c.ITL < 0 || c.ITLPerRunning < 0 || c.MaxRunning < 0 ||
		c.HandoffTimeout < 0 || c.MaxModelLen < 0 || c.MaxRunningRequests < 0 || c.HangMax < 0 ||
		c.DPSize < 0 || c.DPSize > maxDPSize || c.PrefillFixed < 0 || c.PrefillChunkTokens < 0 ||
		c.KVTransferPerBlock < 0 || c.BlockSize < 1 || c.KVCacheBlocks < 1 {
		return c, fmt.Errorf("sim: negative latency, size or timeout setting")
	}
	for _, f := range c.Faults {
		if _, err := ParseFault(f); err != nil {
			return c, err
		}
	}
	kv, err := kvevents.ParseConfig(c.Engine, c.KVEventsConfig)
	if err != nil {
		return c, fmt.Errorf("sim: %w", err)
	}
	c.kvEvents = kv
	return c, nil
}

// needsBootstrap reports whether the instance runs a bootstrap listener.
func (c Config) needsBootstrap() bool {
	if c.Role != RolePrefill {
		return false
	}
	return c.Engine == EngineSGLang || c.KVConnector == ConnectorMooncake
}
