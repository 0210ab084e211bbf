package grpcsim

import (
	sglangpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/sglang"
	tokenspeedpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/tokenspeed"
	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
)

// TokenLogprob is the simulator's deterministic logprob of output token id at output
// position pos: -(1 + (id+pos) mod 8) / 8.
func TokenLogprob(id uint32, pos int) float32 {
	return -float32(1+(int(id)+pos)%8) / 8
}

// TopLogprobs are the k alternatives the simulator reports for output token id at
// position pos, best first: the token itself, then ids id+7j (wrapped into the generated
// range) with logprob TokenLogprob - j/2.
func TopLogprobs(id uint32, pos, k int) (ids []uint32, values []float32) {
	lp := TokenLogprob(id, pos)
	for j := 0; j < k; j++ {
		alt := id
		if j > 0 {
			alt = tokenBase + (id-tokenBase+uint32(7*j))%tokenRange
		}
		ids = append(ids, alt)
		values = append(values, lp-float32(j)/2)
	}
	return ids, values
}

// plainLogprobs are one event's logprobs engine-neutrally; nil when not asked for.
func plainLogprobs(req genRequest, ev event) (lps []float32, tops [][]uint32, topVals [][]float32) {
	if !req.logprobs || len(ev.ids) == 0 {
		return nil, nil, nil
	}
	for i, id := range ev.ids {
		lps = append(lps, TokenLogprob(id, ev.lpFrom+i))
		ti, tv := TopLogprobs(id, ev.lpFrom+i, req.topLogprobs)
		tops, topVals = append(tops, ti), append(topVals, tv)
	}
	return lps, tops, topVals
}

func sglangLogprobs(req genRequest, ev event) *sglangpb.OutputLogProbs {
	lps, tops, vals := plainLogprobs(req, ev)
	if lps == nil {
		return nil
	}
	m := &sglangpb.OutputLogProbs{TokenLogprobs: lps, TokenIds: ev.ids}
	for i := range tops {
		m.TopLogprobs = append(m.TopLogprobs, &sglangpb.TopLogProbs{Values: vals[i], TokenIds: tops[i]})
	}
	return m
}

func tokenspeedLogprobs(req genRequest, ev event) *tokenspeedpb.OutputLogProbs {
	lps, tops, vals := plainLogprobs(req, ev)
	if lps == nil {
		return nil
	}
	m := &tokenspeedpb.OutputLogProbs{TokenLogprobs: lps, TokenIds: ev.ids}
	for i := range tops {
		m.TopLogprobs = append(m.TopLogprobs, &tokenspeedpb.TopLogProbs{Values: vals[i], TokenIds: tops[i]})
	}
	return m
}

func vllmLogprobs(req genRequest, ev event) *vllmpb.OutputLogProbs {
	lps, tops, vals := plainLogprobs(req, ev)
	if lps == nil {
		return nil
	}
	m := &vllmpb.OutputLogProbs{TokenLogprobs: lps, TokenIds: ev.ids}
	for i := range tops {
		m.TopLogprobs = append(m.TopLogprobs, &vllmpb.TopLogProbs{Values: vals[i], TokenIds: tops[i]})
	}
	return m
}

// PromptLogprob is the simulator's deterministic logprob of prompt token id at position pos
// (what a prefill reports for return_logprob): none for the first token, else
// -(1 + (id+pos) mod 5) / 4.
func PromptLogprob(id uint32, pos int) *float32 {
	if pos == 0 {
		return nil
	}
	v := -float32(1+(int(id)+pos)%5) / 4
	return &v
}

func sglangInputLogprobs(req genRequest) *sglangpb.InputLogProbs {
	if !req.promptLogprobs {
		return nil
	}
	m := &sglangpb.InputLogProbs{TokenIds: req.ids}
	for i, id := range req.ids {
		m.TokenLogprobs = append(m.TokenLogprobs, &sglangpb.InputTokenLogProb{Value: PromptLogprob(id, i)})
	}
	return m
}

func vllmInputLogprobs(req genRequest) *vllmpb.InputLogProbs {
	if !req.promptLogprobs {
		return nil
	}
	m := &vllmpb.InputLogProbs{TokenIds: req.ids}
	for i, id := range req.ids {
		m.TokenLogprobs = append(m.TokenLogprobs, &vllmpb.InputTokenLogProb{Value: PromptLogprob(id, i)})
	}
	return m
}
