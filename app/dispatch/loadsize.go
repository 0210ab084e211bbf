package dispatch

import (
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/policy"
)

// loadSize is what a request adds to its workers' token load (worker.Live.TokenLoad) while
// its legs run: the prompt (handoff.Request.LoadPromptTokens: counted when the body carries
// token ids, else estimated as body bytes ÷ 4 — the dispatcher holds no tokenizer at
// selection time; the gRPC pipeline, which tokenizes after the pair is chosen, replaces the
// estimate by its count through PromptTokensCounted) and the expected
// decode tokens (handoff.Request.DecodeTokens, handoff.DefaultDecodeTokens when uncapped).
// counted reports that prompt is a count of token ids, not an estimate.
func loadSize(rq *handoff.Request) (prompt, decode int, counted bool) {
	prompt, counted = rq.LoadPromptTokens()
	return prompt, rq.DecodeTokens(handoff.DefaultDecodeTokens), counted
}

// sizeRequest fills preq's token sizes: PromptTokens and DecodeTokens from loadSize, Tokens
// (what least_load credits, bucket sizes by, and the PD decision reads) when the prompt's
// tokens are counted, and TokenIDs from tokenize (nil: not tokenized) — a tokenized
// prompt's length replaces the byte estimate in PromptTokens and Tokens.
func sizeRequest(preq *policy.Request, rq *handoff.Request, tokenize func() []uint32) {
	var counted bool
	preq.PromptTokens, preq.DecodeTokens, counted = loadSize(rq)
	if counted {
		preq.Tokens = preq.PromptTokens
	}
	if tokenize == nil {
		return
	}
	if ids := tokenize(); len(ids) > 0 {
		preq.TokenIDs = ids
		preq.Tokens, preq.PromptTokens = len(ids), len(ids)
	}
}
