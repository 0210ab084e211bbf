// Package progress is the per-worker progress watchdog's pure logic: a Tracker per worker
// knows the worker's legs in flight and when each last made progress (a response head, a
// first token, any token or chunk, a KV handoff answer, a completion), keeps running
// averages (EWMA) of the worker's first-token and inter-token times, and from them derives
// the worker's stall bound, clamped between a floor and a ceiling. A worker is suspect when
// it has a leg that made no progress for the bound while none of its legs made any for the
// bound: a worker producing output for other legs is never suspect. The caller (the gateway's
// watchdog) decides what suspicion costs: no new legs, an active canary, an ejection.
//
// Time is passed in by the caller, so the logic is tested without a clock.
package progress
