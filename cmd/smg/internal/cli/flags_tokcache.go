package cli

import (
	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// tokenizerCacheFlags registers the gRPC tokenization cache's flags (SMG's names; README flag
// table): L0 whole inputs, L1 the pieces between added tokens. add puts a flag in the
// current help group.
func tokenizerCacheFlags(fs *pflag.FlagSet, cfg *config.Config, add func(name string)) {
	tc := &cfg.TokenizerCache
	fs.BoolVar(&tc.EnableL0, "tokenizer-cache-enable-l0", tc.EnableL0, "gRPC: cache the token ids of whole inputs (exact match: repeated prompts)")
	add("tokenizer-cache-enable-l0")
	fs.IntVar(&tc.L0MaxEntries, "tokenizer-cache-l0-max-entries", tc.L0MaxEntries, "gRPC: most inputs the L0 cache holds")
	add("tokenizer-cache-l0-max-entries")
	fs.Int64Var(&tc.L0MaxMemory, "tokenizer-cache-l0-max-memory", tc.L0MaxMemory, "gRPC: memory `bytes` the L0 cache may hold (text and ids)")
	add("tokenizer-cache-l0-max-memory")
	fs.BoolVar(&tc.EnableL1, "tokenizer-cache-enable-l1", tc.EnableL1, "gRPC: cache the token ids of the pieces between special tokens (shared system prompts, earlier chat messages)")
	add("tokenizer-cache-enable-l1")
	fs.Int64Var(&tc.L1MaxMemory, "tokenizer-cache-l1-max-memory", tc.L1MaxMemory, "gRPC: memory `bytes` the L1 cache may hold (text and ids)")
	add("tokenizer-cache-l1-max-memory")
}
