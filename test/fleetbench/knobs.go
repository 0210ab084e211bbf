package fleetbench

import (
	"strconv"

	"github.com/smg-go/smg/test/sim"
)

// SimKnobs are the simulators' timing and cache settings (smg-sim flags). A zero value is
// not passed, leaving smg-sim's own default.
type SimKnobs struct {
	// BlockSize is --block-size, tokens per KV block (vLLM's default 16).
	BlockSize int
	// KVCacheBlocks is --kv-cache-blocks, the cache capacity of each simulator in blocks.
	KVCacheBlocks int
	// PrefillTokensPerS is --prefill-tokens-per-s, the prefill speed in uncached prompt
	// tokens per second.
	PrefillTokensPerS float64
	// PrefillFixedMS is --prefill-fixed-ms, the fixed cost of every prefill computation, ms.
	PrefillFixedMS float64
	// KVTransferMSPerBlock is --kv-transfer-ms-per-block, the decode's KV-transfer time per
	// block received, ms.
	KVTransferMSPerBlock float64
	// ITLms and ITLPerRunningms are --itl-ms and --itl-per-running-ms (decode), milliseconds.
	ITLms, ITLPerRunningms float64
	// PrefillMaxRunning and DecodeMaxRunning are --max-running per role (requests).
	PrefillMaxRunning, DecodeMaxRunning int
}

// DefaultKnobs are the documented defaults (docs/fleet-bench.md): blocks of 16 tokens, 2048
// blocks (32,768 tokens) per simulator, prefill 5 ms + uncached tokens at 20,000 tokens/s
// with 8 prompts at a time, KV transfer 0.05 ms per block, decode ITL 10 ms + 0.2 ms per
// running request with 64 at a time. With 4
// prefills the default shared-prefix working set (16 × 3000 tokens, about 3000 blocks) is
// larger than one prefill's cache but a quarter of it fits: routing decides the hit rate.
func DefaultKnobs() SimKnobs {
	return SimKnobs{BlockSize: 16, KVCacheBlocks: 2048, PrefillTokensPerS: 20000,
		PrefillFixedMS: 5, KVTransferMSPerBlock: 0.05,
		ITLms: 10, ITLPerRunningms: 0.2, PrefillMaxRunning: 8, DecodeMaxRunning: 64}
}

// args renders the smg-sim flags for role.
func (k SimKnobs) args(role string) []string {
	var a []string
	num := func(flag string, v float64) {
		if v > 0 {
			a = append(a, flag, strconv.FormatFloat(v, 'f', -1, 64))
		}
	}
	num("--block-size", float64(k.BlockSize))
	num("--kv-cache-blocks", float64(k.KVCacheBlocks))
	num("--prefill-tokens-per-s", k.PrefillTokensPerS)
	num("--prefill-fixed-ms", k.PrefillFixedMS)
	if role == sim.RoleDecode {
		num("--kv-transfer-ms-per-block", k.KVTransferMSPerBlock)
		num("--itl-ms", k.ITLms)
		num("--itl-per-running-ms", k.ITLPerRunningms)
		num("--max-running", float64(k.DecodeMaxRunning))
	} else {
		num("--max-running", float64(k.PrefillMaxRunning))
	}
	return a
}
