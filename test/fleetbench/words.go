package fleetbench

import (
	"math/rand/v2"
	"strconv"
	"strings"
)

// vocabulary is the word list prompts are drawn from. The simulators' stand-in tokenizer
// counts one token per whitespace-separated word (test/sim README), so a text of n words is
// a prompt of n tokens there.
var vocabulary = strings.Fields(`the of and to in is that for it as with was on be by at this
from or have an are not which but all were when we there can one has been more if will
would about out so what up their into some them time could only other than then its also
after two first way our new because any these most over where through system model request
answer query table index cache token block route worker queue latency prefix session agent
file function return value error result check build test config server client stream batch
decode prefill policy replica window budget tenant region zone shard lease event`)

// newRand is the generator of one workload stream: PCG seeded with (seed, stream), so every
// workload and every part of one is deterministic and independent of the others.
func newRand(seed uint64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream))
}

// words appends n words drawn from vocabulary to b, each followed by a space, and returns b.
func words(b []byte, r *rand.Rand, n int) []byte {
	for range n {
		b = append(b, vocabulary[r.IntN(len(vocabulary))]...)
		b = append(b, ' ')
	}
	return b
}

// text returns tag followed by n-1 random words: a tag such as "doc-3" makes otherwise random
// texts distinct from their first token, so unrelated prompts share no block.
func text(r *rand.Rand, tag string, n int) string {
	b := make([]byte, 0, n*7)
	b = append(b, tag...)
	b = append(b, ' ')
	b = words(b, r, max(n-1, 0))
	return strings.TrimRight(string(b), " ")
}

// span returns a uniform integer in [lo, hi].
func span(r *rand.Rand, lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + r.IntN(hi-lo+1)
}

func itoa(i int) string { return strconv.Itoa(i) }
