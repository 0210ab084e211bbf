package dispatch

import "github.com/smg-go/smg/domain/handoff"

// loadSize is what a request adds to its workers' token load (worker.Live.TokenLoad) while
// its legs run: the prompt (handoff.Request.LoadPromptTokens: counted when the body carries
// token ids, else estimated as body bytes ÷ 4 — the dispatcher holds no tokenizer at
// selection time; the gRPC pipeline, which tokenizes after the pair is chosen, replaces the
// estimate by its count through PromptTokensCounted) and the expected
// decode tokens (handoff.Request.DecodeTokens, handoff.DefaultDecodeTokens when uncapped).
func loadSize(rq *handoff.Request) (prompt, decode int) {
	prompt, _ = rq.LoadPromptTokens()
	return prompt, rq.DecodeTokens(handoff.DefaultDecodeTokens)
}
