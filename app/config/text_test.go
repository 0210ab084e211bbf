package config_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
)

func TestTextPipelineParsersAreValidated(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		tool, reasoning, flag string
	}{
		{"qwen", "qwen3", ""},
		{"llama", "", ""},
		{"", "deepseek-r1", ""},
		{"hermes9", "", "--tool-call-parser"},
		{"", "nope", "--reasoning-parser"},
	} {
		cfg := config.Default()
		cfg.ToolCallParser, cfg.ReasoningParser = c.tool, c.reasoning
		err := cfg.Validate()
		if c.flag == "" {
			assert.NoError(t, err)
			continue
		}
		var fe *config.FlagError
		require.ErrorAs(t, err, &fe)
		assert.Equal(t, c.flag, fe.Flag)
	}
}
