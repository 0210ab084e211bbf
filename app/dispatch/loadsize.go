package dispatch

import "github.com/smg-go/smg/domain/handoff"

// loadSize is what a request adds to its workers' token load (worker.Live.TokenLoad) while
// its legs run: the prompt estimated from the body (handoff.Request.EstimatePromptTokens,
// bytes ÷ 4: the dispatcher has no tokenizer at selection time, on the HTTP and the gRPC
// path alike, since the gRPC pipeline tokenizes after the pair is chosen) and the expected
// decode tokens (handoff.Request.DecodeTokens, handoff.DefaultDecodeTokens when uncapped).
func loadSize(rq *handoff.Request) (prompt, decode int) {
	return rq.EstimatePromptTokens(), rq.DecodeTokens(handoff.DefaultDecodeTokens)
}
