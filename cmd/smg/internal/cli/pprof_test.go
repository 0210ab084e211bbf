package cli_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

func TestPprofAddrMustBeLoopback(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, addr, want string
	}{
		{"any address is refused", "0.0.0.0:6060", "loopback address only"},
		{"a remote host is refused", "10.1.2.3:6060", "loopback address only"},
		{"a host without a port is refused", "127.0.0.1", "expected host:port"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			code := cli.Run(context.Background(), []string{"launch", "--pprof-addr", tc.addr, "--port", "0"},
				envOf(nil), &bytes.Buffer{}, &stderr)
			assert.Equal(t, 2, code)
			require.Contains(t, stderr.String(), "--pprof-addr")
			assert.Contains(t, stderr.String(), tc.want)
		})
	}
}

func TestPprofAddrParsesWithTheLaunchFlags(t *testing.T) {
	t.Parallel()
	cfg, err := cli.ParseLaunch([]string{"--pprof-addr", "127.0.0.1:0", "--port", "0"}, envOf(nil))
	require.NoError(t, err)
	assert.Equal(t, 0, cfg.Port)
}
