package fleetbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReusableCountsThePrefixSharedWithAnEarlierPrompt(t *testing.T) {
	t.Parallel()
	msg := func(s string) []Message { return []Message{{Role: "user", Content: s}} } // "user: " + s + "\n"
	reqs := []Request{{Messages: msg("abcdefgh")}, {Messages: msg("abcdXXXX")}, {Messages: msg("zzzzzzzz")}}
	// Each prompt is 15 bytes; the second shares "user: abcd" (10) with the first, the
	// third "user: " (6) with either.
	assert.InDelta(t, 16.0/45.0, Reusable(reqs), 1e-9)
	assert.Zero(t, Reusable(nil))
	assert.InDelta(t, 0.5, Reusable([]Request{{Messages: msg("same")}, {Messages: msg("same")}}), 1e-9)
}
