package metrics

// AddRecomputedPrompt adds tokens, the prompt tokens a PD decode worker computed itself, to
// smg_pd_recomputed_prompts_total{decode=decodeURL,connector}. connector is the pair's KV
// transport (nixl, mooncake, passthrough; SGLang's and TokenSpeed's transfer backend).
// tokens <= 0 adds nothing.
func (m *Metrics) AddRecomputedPrompt(decodeURL, connector string, tokens int) {
	if tokens <= 0 {
		return
	}
	m.recomputed.WithLabelValues(decodeURL, connector).Add(float64(tokens))
}

// IncPDDecision counts one selective-PD decision in
// smg_pd_decisions_total{decision,reason} (decision disaggregated, decode_only or prefill_only).
func (m *Metrics) IncPDDecision(decision, reason string) {
	m.decisions.WithLabelValues(decision, reason).Inc()
}
