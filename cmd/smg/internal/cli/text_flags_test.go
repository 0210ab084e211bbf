package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

func TestTextPipelineFlags(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{"--chat-template", "/m/chat.jinja", "--tool-call-parser", "qwen", "--reasoning-parser", "qwen3"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "/m/chat.jinja", cfg.ChatTemplate)
	assert.Equal(t, "qwen", cfg.ToolCallParser)
	assert.Equal(t, "qwen3", cfg.ReasoningParser)
	_, err = cli.ParseLaunch([]string{"--tool-call-parser", "hermes9"}, envOf(nil))
	assert.ErrorContains(t, err, "--tool-call-parser")
}
