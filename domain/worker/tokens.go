package worker

// The gateway's token load on a worker: prompt tokens and expected decode tokens of the legs
// it has in flight there, counted at dispatch and released at the end of the leg (the
// selection's release). The counters are atomics kept beside the in-flight request count
// (Load). Other gateway instances' token load on the worker, when shared (ports.TokenBoard),
// is kept apart (SetRemoteTokens) and added by TokenLoad.

// TokenLoad is the tokens in flight on the worker: this gateway's legs (LocalTokenLoad) plus
// what the other instances last published (RemoteTokens).
func (l *Live) TokenLoad() int64 { return l.LocalTokenLoad() + l.remoteTok.Load() }

// LocalTokenLoad is the tokens of the legs this gateway has in flight on the worker: prompt
// tokens plus expected decode tokens (PromptTokens + DecodeTokens).
func (l *Live) LocalTokenLoad() int64 { return l.promptTok.Load() + l.decodeTok.Load() }

// RemoteTokens is the other gateway instances' token load on the worker, as last shared.
func (l *Live) RemoteTokens() int64 { return l.remoteTok.Load() }

// SetRemoteTokens records the other instances' token load on the worker (negative: 0).
func (l *Live) SetRemoteTokens(n int64) { l.remoteTok.Store(max(n, 0)) }

// PromptTokens is the prompt tokens of the legs in flight on the worker.
func (l *Live) PromptTokens() int64 { return l.promptTok.Load() }

// DecodeTokens is the expected decode tokens (max_tokens, or the gateway's default) of the
// legs in flight on the worker.
func (l *Live) DecodeTokens() int64 { return l.decodeTok.Load() }

// HoldTokens adds prompt and decode tokens of one leg; the caller pairs it with exactly one
// UnholdTokens of the same amounts. Negative amounts are taken as 0.
func (l *Live) HoldTokens(prompt, decode int64) {
	l.promptTok.Add(max(prompt, 0))
	l.decodeTok.Add(max(decode, 0))
}

// UnholdTokens removes the tokens added by HoldTokens with the same amounts.
func (l *Live) UnholdTokens(prompt, decode int64) {
	l.promptTok.Add(-max(prompt, 0))
	l.decodeTok.Add(-max(decode, 0))
}
