package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/handoff"
)

func TestRecomputedTokens(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                 string
		prompt, cached, page int
		want                 int
	}{
		{"the whole prompt came with the KV", 100, 100, 16, 0},
		{"page-aligned cached tokens of a handed-off prompt", 100, 96, 16, 0},
		{"a full last page computed locally", 96, 80, 16, 0},
		{"recomputed from scratch", 100, 0, 16, 100},
		{"recomputed after local prefix hits", 100, 32, 16, 68},
		{"unknown page size is 16", 40, 0, 0, 40},
		{"a prompt within one page cannot be told apart", 12, 0, 16, 0},
		{"no usage reported", 0, 0, 16, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, handoff.RecomputedTokens(c.prompt, c.cached, c.page))
		})
	}
}
