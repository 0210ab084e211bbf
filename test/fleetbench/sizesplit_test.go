package fleetbench

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestSizeSplit(t *testing.T) {
	t.Parallel()
	reqs := []Request{
		{Messages: []Message{{Role: "user", Content: "hi"}}},
		{Messages: []Message{{Role: "user", Content: strings.Repeat("x", LongPromptChars-1)}}},
		{Messages: []Message{{Role: "system", Content: strings.Repeat("x", LongPromptChars/2)}, {Role: "user", Content: strings.Repeat("y", LongPromptChars/2)}}},
		{Messages: []Message{{Role: "user", Content: strings.Repeat("x", 2*LongPromptChars)}}},
	}
	rs := []Result{
		{Index: 0, TTFT: 10 * time.Millisecond},
		{Index: 1, TTFT: 20 * time.Millisecond},
		{Index: 2, TTFT: 300 * time.Millisecond},
		{Index: 3, Err: "boom"},
	}
	got := SizeSplit(rs, reqs)
	assert.Equal(t, 2, got["short"].N)
	assert.Equal(t, 20.0, got["short"].Max)
	assert.Equal(t, 1, got["long"].N, "a failed request is left out")
	assert.Equal(t, 300.0, got["long"].P50)

	var b bytes.Buffer
	WriteSizeSplit(&b, []Cell{{Workload: "mixed", Policy: "p", Replicas: 1, TTFTBySize: got}, {Workload: "unique"}})
	assert.Equal(t, 1, strings.Count(b.String(), "\n"), "only cells with both sizes get a line")
	assert.Contains(t, b.String(), "short n=2 p50 10")
	assert.Contains(t, b.String(), "long n=1 p50 300")
}
