package cli

import (
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
)

func TestSelectivePDPrefillOnlyFlag(t *testing.T) {
	t.Parallel()
	var cfg config.Config
	fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
	var names []string
	selectivePDFlags(fs, &cfg, func(n string) { names = append(names, n) })
	assert.Contains(t, names, "selective-pd-prefill-only-max-tokens")
	assert.Zero(t, cfg.SelectivePD.PrefillOnlyMaxTokens, "off by default")
	require.NoError(t, fs.Parse([]string{"--selective-pd-prefill-only-max-tokens=8"}))
	assert.Equal(t, 8, cfg.SelectivePD.PrefillOnlyMaxTokens)
}
