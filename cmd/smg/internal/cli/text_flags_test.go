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

func TestTokenizerCacheFlags(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch(nil, envOf(nil))
	require.NoError(t, err)
	assert.False(t, cfg.TokenizerCache.EnableL0, "off by default, as in SMG")
	assert.False(t, cfg.TokenizerCache.EnableL1)
	assert.Equal(t, 10000, cfg.TokenizerCache.L0MaxEntries)
	assert.Equal(t, int64(64<<20), cfg.TokenizerCache.L0MaxMemory)
	assert.Equal(t, int64(52428800), cfg.TokenizerCache.L1MaxMemory)
	cfg, err = cli.ParseLaunch([]string{"--tokenizer-cache-enable-l0", "--tokenizer-cache-l0-max-entries", "20000", "--tokenizer-cache-l0-max-memory", "1048576",
		"--tokenizer-cache-enable-l1", "--tokenizer-cache-l1-max-memory", "104857600"}, envOf(nil))
	require.NoError(t, err)
	o := cfg.TokenizerCache.Options()
	assert.True(t, o.L0)
	assert.True(t, o.L1)
	assert.Equal(t, 20000, o.L0MaxEntries)
	assert.Equal(t, int64(1048576), o.L0MaxBytes)
	assert.Equal(t, int64(104857600), o.L1MaxBytes)
	for _, f := range []string{"--tokenizer-cache-l0-max-entries", "--tokenizer-cache-l0-max-memory", "--tokenizer-cache-l1-max-memory"} {
		_, err = cli.ParseLaunch([]string{f, "0"}, envOf(nil))
		assert.ErrorContains(t, err, f)
	}
}
