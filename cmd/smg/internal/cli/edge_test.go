package cli_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

func TestAdminAPIKeyFromFlagEnvironmentOrFile(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{"--admin-api-key", "flag-key", "--api-key", "data-key"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "flag-key", cfg.AdminAPIKey)
	assert.Equal(t, "data-key", cfg.APIKey)

	cfg, err = cli.ParseLaunch(nil, envOf(map[string]string{"SMG_ADMIN_API_KEY": "env-key", "SMG_API_KEY": "env-data"}))
	require.NoError(t, err)
	assert.Equal(t, "env-key", cfg.AdminAPIKey)
	assert.Equal(t, "env-data", cfg.APIKey)

	path := filepath.Join(t.TempDir(), "admin.key")
	require.NoError(t, os.WriteFile(path, []byte("file-key\n"), 0o600))
	cfg, err = cli.ParseLaunch([]string{"--admin-api-key-file", path}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, "file-key", cfg.AdminAPIKey)

	_, err = cli.ParseLaunch([]string{"--admin-api-key-file", path}, envOf(map[string]string{"SMG_ADMIN_API_KEY": "env-key"}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--admin-api-key-file")
	assert.NotContains(t, err.Error(), "env-key", "a key is never echoed")
}

func TestEdgeFlagsParse(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{
		"--body-read-timeout-secs", "5", "--max-workers", "8", "--registration-probe-concurrency", "2",
		"--worker-allowed-hosts", "10.0.0.0/8", "--worker-allowed-hosts", "gpu-0",
		"--request-id-headers", "x-request-id",
	}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 5.0, cfg.BodyReadTimeout.Seconds())
	assert.Equal(t, 8, cfg.MaxWorkers)
	assert.Equal(t, 2, cfg.RegistrationProbes)
	assert.Equal(t, []string{"10.0.0.0/8", "gpu-0"}, cfg.WorkerAllowedHosts)
	assert.Equal(t, []string{"x-request-id"}, cfg.RequestIDHeaders)
}
