package edge_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestBadRedisDatabaseNumberExitsTwoWithOneLine(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis://127.0.0.1:6379/abc", "redis://127.0.0.1:6379/-1", "redis://127.0.0.1:6379/1/2", "redis://127.0.0.1:6379?db=x"} {
		t.Run(u, func(t *testing.T) {
			t.Parallel()
			code, stderr := runExit(t, nil, "launch", "--pd-disaggregation", "--redis-url", u)
			assert.Equal(t, 2, code, stderr)
			assert.Equal(t, 1, strings.Count(stderr, "\n"), "one line: %q", stderr)
			assert.True(t, strings.HasPrefix(stderr, "smg: invalid value for --redis-url: "), stderr)
		})
	}
}

func TestRedisPasswordIsNotEchoedInTheError(t *testing.T) {
	t.Parallel()
	code, stderr := runExit(t, nil, "launch", "--redis-url", "redis://user:s3cret@127.0.0.1:6379/x")
	assert.Equal(t, 2, code, stderr)
	assert.NotContains(t, stderr, "s3cret")
}
