package cli_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

// The seed's "Kubernetes Service Discovery" command line, verbatim.
func TestServiceDiscoveryFlagsAsTheSeedWritesThem(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{"--service-discovery", "--pd-disaggregation",
		"--prefill-selector", "app=sglang", "role=prefill",
		"--decode-selector", "app=sglang", "role=decode",
		"--service-discovery-namespace", "inference", "--service-discovery-port", "8000",
		"--prefill-policy", "cache_aware", "--decode-policy", "least_load"}, envOf(nil))
	require.NoError(t, err)
	assert.True(t, cfg.ServiceDiscovery)
	assert.Equal(t, []string{"app=sglang", "role=prefill"}, cfg.PrefillSelector)
	assert.Equal(t, []string{"app=sglang", "role=decode"}, cfg.DecodeSelector)
	assert.Equal(t, "inference", cfg.ServiceDiscoveryNamespace)
	assert.Equal(t, 8000, cfg.ServiceDiscoveryPort)
	assert.Equal(t, "least_load", cfg.DecodePolicy)

	cfg, err = cli.ParseLaunch([]string{"--service-discovery", "--selector", "app=sglang"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, []string{"app=sglang"}, cfg.Selector)
	assert.Equal(t, 80, cfg.ServiceDiscoveryPort, "SMG's default port")

	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"--service-discovery", "--pd-disaggregation"}, "--service-discovery"},
		{[]string{"--service-discovery"}, "--service-discovery"},
		{[]string{"--service-discovery", "--selector", "app=x", "--service-discovery-port", "0"}, "--service-discovery-port"},
		{[]string{"--decode-selector", "=x"}, "--decode-selector"},
	} {
		_, err := cli.ParseLaunch(c.args, envOf(nil))
		assert.ErrorContains(t, err, c.flag, "%v", c.args)
	}
}
