package grpcengine

import "github.com/smg-go/smg/domain/respond"

// topLogprobs is a TopLogProbs message of any of the engines' protos (values=1,
// token_ids=2; smg-spec.md §9.1).
type topLogprobs interface {
	GetValues() []float32
	GetTokenIds() []uint32
}

// logprobsMsg is an OutputLogProbs message of any of the engines' protos (token_logprobs=1,
// token_ids=2, top_logprobs=3: one entry per generated token).
type logprobsMsg[T topLogprobs] interface {
	GetTokenLogprobs() []float32
	GetTokenIds() []uint32
	GetTopLogprobs() []T
}

// outputLogprobs turns an engine's OutputLogProbs into one respond.Logprob per token (its
// top alternatives in the engine's order); nil when the message is absent or empty.
func outputLogprobs[T topLogprobs, M logprobsMsg[T]](m M) []respond.Logprob {
	ids, lps := m.GetTokenIds(), m.GetTokenLogprobs()
	n := min(len(ids), len(lps))
	if n == 0 {
		return nil
	}
	tops := m.GetTopLogprobs()
	out := make([]respond.Logprob, n)
	for i := 0; i < n; i++ {
		out[i] = respond.Logprob{TokenID: ids[i], Logprob: float64(lps[i])}
		if i < len(tops) {
			vals, tids := tops[i].GetValues(), tops[i].GetTokenIds()
			for k := 0; k < min(len(vals), len(tids)); k++ {
				out[i].Top = append(out[i].Top, respond.TopLogprob{TokenID: tids[k], Logprob: float64(vals[k])})
			}
		}
	}
	return out
}
