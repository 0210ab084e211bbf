package grpcengine

import (
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/smg-go/smg/domain/respond"
)

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

// inputValue is an InputTokenLogProb of SGLang's or vLLM's proto (value=1, optional).
type inputValue interface{ GetValue() float32 }

// inputLogprobsMsg is an InputLogProbs message (token_logprobs=1, token_ids=2).
type inputLogprobsMsg[V interface {
	inputValue
	comparable
}] interface {
	GetTokenLogprobs() []V
	GetTokenIds() []uint32
}

// promptLogprobs turns an engine's InputLogProbs into one respond.PromptLogprob per prompt
// token (nil value where the engine sent none: the first token); nil when absent.
func promptLogprobs[V interface {
	inputValue
	comparable
}, M inputLogprobsMsg[V]](m M) []respond.PromptLogprob {
	ids, vals := m.GetTokenIds(), m.GetTokenLogprobs()
	if len(ids) == 0 {
		return nil
	}
	var zero V
	out := make([]respond.PromptLogprob, len(ids))
	for i, id := range ids {
		out[i].TokenID = id
		if i < len(vals) && vals[i] != zero && hasValue(vals[i]) {
			v := float64(vals[i].GetValue())
			out[i].Logprob = &v
		}
	}
	return out
}

// hasValue reports whether an InputTokenLogProb carries its optional value.
func hasValue(v any) bool {
	h, ok := v.(interface{ ProtoReflect() protoreflect.Message })
	if !ok {
		return true
	}
	m := h.ProtoReflect()
	return m.Has(m.Descriptor().Fields().ByName("value"))
}
