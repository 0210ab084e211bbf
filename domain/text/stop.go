package text

import "strings"

// StopJail trims stop sequences from streamed text with SMG's hold-back rule
// (crates/tokenizer/src/stop.rs): text that could be the start of a stop sequence is held
// ("jailed") until it either completes a stop, which ends the output, or diverges, which
// releases it. The stop that completes first (earliest end; ties: the longer one) wins, so the
// result does not depend on how the text was cut into chunks.
type StopJail struct {
	hidden  []string // trimmed from the output (OpenAI stop, SGLang default)
	visible []string // kept in the output, the text after them dropped
	pending string
	done    bool
	matched string
}

// NewStopJail checks hidden stops (removed from the output) and visible ones (kept). Empty
// strings are ignored.
func NewStopJail(hidden, visible []string) *StopJail {
	j := &StopJail{}
	for _, s := range hidden {
		if s != "" {
			j.hidden = append(j.hidden, s)
		}
	}
	for _, s := range visible {
		if s != "" {
			j.visible = append(j.visible, s)
		}
	}
	return j
}

// Push adds text and returns what can be emitted now. stopped is true once a stop sequence
// matched; everything after it is dropped and later Push calls return "".
func (j *StopJail) Push(text string) (out string, stopped bool) {
	if j.done {
		return "", true
	}
	if len(j.hidden)+len(j.visible) == 0 {
		return text, false
	}
	j.pending += text
	bestEnd, bestStart, bestVisible := -1, 0, false
	check := func(stops []string, visible bool) {
		for _, s := range stops {
			i := strings.Index(j.pending, s)
			if i < 0 {
				continue
			}
			end := i + len(s)
			if bestEnd < 0 || end < bestEnd || (end == bestEnd && i < bestStart) {
				bestEnd, bestStart, bestVisible = end, i, visible
			}
		}
	}
	check(j.hidden, false)
	check(j.visible, true)
	if bestEnd >= 0 {
		j.done, j.matched = true, j.pending[bestStart:bestEnd]
		out = j.pending[:bestStart]
		if bestVisible {
			out = j.pending[:bestEnd]
		}
		j.pending = ""
		return out, true
	}
	hold := j.heldSuffix()
	out = j.pending[:len(j.pending)-hold]
	j.pending = j.pending[len(j.pending)-hold:]
	return out, false
}

// heldSuffix is the length of the longest suffix of pending that is a proper prefix of a stop.
func (j *StopJail) heldSuffix() int {
	best := 0
	for _, stops := range [][]string{j.hidden, j.visible} {
		for _, s := range stops {
			for n := min(len(s)-1, len(j.pending)); n > best; n-- {
				if strings.HasSuffix(j.pending, s[:n]) {
					best = n
					break
				}
			}
		}
	}
	return best
}

// Flush releases held text at the end of generation (no stop matched).
func (j *StopJail) Flush() string {
	out := j.pending
	j.pending = ""
	return out
}

// Matched is the stop sequence that ended the output, or "".
func (j *StopJail) Matched() string { return j.matched }

// Stopped reports whether a stop sequence matched.
func (j *StopJail) Stopped() bool { return j.done }
