package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

// --enable-igw (seed "Per-Phase Policies") is accepted; with it, as with service
// discovery, a leg's power_of_two is not checked against the startup workers, which arrive
// later. Without it the one-prefill command line is refused as before.
func TestEnableIGWSkipsTheStartupWorkerCount(t *testing.T) {
	t.Parallel()
	args := []string{"--pd-disaggregation", "--prefill", "http://p:8000", "8998", "--decode", "http://d:8000",
		"--prefill-policy", "power_of_two"}
	_, err := cli.ParseLaunch(args, envOf(nil))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "power_of_two needs at least 2 prefill workers at startup")

	cfg, err := cli.ParseLaunch(append([]string{"--enable-igw"}, args...), envOf(nil))
	require.NoError(t, err)
	assert.True(t, cfg.EnableIGW)

	_, err = cli.ParseLaunch(append([]string{"--enable-igw"}, "--pd-disaggregation", "--decode-policy", "bucket"), envOf(nil))
	require.Error(t, err, "the leg rule still applies")
	assert.Contains(t, err.Error(), "bucket is a prefill-only policy")
}
