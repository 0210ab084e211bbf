package config

import (
	"strings"

	"github.com/smg-go/smg/domain/respond"
	"github.com/smg-go/smg/domain/text"
)

// validateText checks the gRPC text-pipeline flags: --tool-call-parser and --reasoning-parser
// must name a parser the gateway has (empty: chosen by model family); the tokenizer cache's
// bounds are positive.
func (c Config) validateText() error {
	if c.ToolCallParser != "" {
		if _, err := respond.NewToolParser(c.ToolCallParser, nil); err != nil {
			return bad("--tool-call-parser", "unknown parser %q (supported: %s)", c.ToolCallParser, strings.Join(respond.ToolParserNames(), ", "))
		}
	}
	if c.ReasoningParser != "" {
		if _, err := respond.NewReasoningParser(c.ReasoningParser); err != nil {
			return bad("--reasoning-parser", "unknown parser %q (supported: %s)", c.ReasoningParser, strings.Join(respond.ReasoningParserNames(), ", "))
		}
	}
	return c.TokenizerCache.validate()
}

// TokenizerCache is the gRPC tokenization cache (SMG's flags; domain/text.EncodeCache): L0
// remembers whole inputs, L1 the pieces between added tokens (chat message boundaries).
// Both are off by default, as in SMG.
type TokenizerCache struct {
	EnableL0     bool  // --tokenizer-cache-enable-l0
	L0MaxEntries int   // --tokenizer-cache-l0-max-entries (10000)
	L0MaxMemory  int64 // --tokenizer-cache-l0-max-memory, bytes (67108864; this gateway's)
	EnableL1     bool  // --tokenizer-cache-enable-l1
	L1MaxMemory  int64 // --tokenizer-cache-l1-max-memory, bytes (52428800)
}

// DefaultTokenizerCache is TokenizerCache's default: both layers off, SMG's bounds.
func DefaultTokenizerCache() TokenizerCache {
	return TokenizerCache{L0MaxEntries: text.DefaultCacheL0MaxEntries, L0MaxMemory: text.DefaultCacheL0MaxBytes,
		L1MaxMemory: text.DefaultCacheL1MaxBytes}
}

// Options are the cache's text.EncodeCacheOptions.
func (t TokenizerCache) Options() text.EncodeCacheOptions {
	return text.EncodeCacheOptions{L0: t.EnableL0, L0MaxEntries: t.L0MaxEntries, L0MaxBytes: t.L0MaxMemory,
		L1: t.EnableL1, L1MaxBytes: t.L1MaxMemory}
}

func (t TokenizerCache) validate() error {
	switch {
	case t.L0MaxEntries < 1:
		return bad("--tokenizer-cache-l0-max-entries", "must be 1 or more (got %d)", t.L0MaxEntries)
	case t.L0MaxMemory < 1:
		return bad("--tokenizer-cache-l0-max-memory", "must be 1 byte or more (got %d)", t.L0MaxMemory)
	case t.L1MaxMemory < 1:
		return bad("--tokenizer-cache-l1-max-memory", "must be 1 byte or more (got %d)", t.L1MaxMemory)
	}
	return nil
}
