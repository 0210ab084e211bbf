package selection

import "github.com/smg-go/smg/domain/policy"

// tokens is what one leg holds on its worker's token load (worker.Live.HoldTokens).
type tokens struct{ prompt, decode int64 }

// legTokens splits a request's token load over its legs: the prefill leg computes the
// prompt (prompt tokens, decode 0: it generates one token); the decode leg holds the
// prompt's KV and generates the rest (prompt tokens and the expected decode tokens).
func legTokens(req *policy.Request) (prefill, decode tokens) {
	pt := req.PromptTokens
	if pt <= 0 {
		pt = req.Tokens
	}
	p, d := int64(max(pt, 0)), int64(max(req.DecodeTokens, 0))
	return tokens{prompt: p}, tokens{prompt: p, decode: d}
}
