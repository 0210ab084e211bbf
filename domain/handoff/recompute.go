package handoff

// DefaultPageSize is the KV page size, in tokens, RecomputedTokens assumes for a decode that
// reports none (vLLM's default block_size).
const DefaultPageSize = 16

// RecomputedTokens is how many prompt tokens a PD decode computed itself instead of
// receiving their KV, from the usage it reported: a decode that received the KV reports
// about the whole prompt as cached (page-aligned, or less the token it computes itself),
// one that recomputed reports only its own prefix-cache hits. So the decode recomputed
// promptTokens - cachedTokens when that is more than one KV page (pageSize tokens; <= 0
// means DefaultPageSize), else 0. A prompt of one page or less cannot be told apart and
// gives 0, as does a report without prompt tokens.
func RecomputedTokens(promptTokens, cachedTokens, pageSize int) int {
	if pageSize <= 0 {
		pageSize = DefaultPageSize
	}
	if promptTokens <= 0 {
		return 0
	}
	short := promptTokens - max(cachedTokens, 0)
	if short <= pageSize {
		return 0
	}
	return short
}
