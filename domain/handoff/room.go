package handoff

import "math/rand/v2"

// MintRoom returns a fresh SGLang bootstrap room: a uniformly random integer in
// [0, 2^63−1], the range SGLang's routers draw from (engines.md §2.1: Python
// random.randint(0, 2**63-1), Rust rand::random::<u64>() & i64::MAX). It is safe for
// concurrent use (math/rand/v2's global generator is per-thread ChaCha8) and never blocks.
// Rooms are emitted as JSON integers.
func MintRoom() uint64 { return rand.Uint64() >> 1 }
