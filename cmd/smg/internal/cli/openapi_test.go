package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/cmd/smg/internal/cli"
)

// `smg openapi --spec-version 3.0` prints the committed 3.0 downgrade (the generators'
// input); an unknown version is a usage error (exit 2) that prints nothing on stdout.
func TestOpenAPISpecVersion30(t *testing.T) {
	t.Parallel()
	committed, err := os.ReadFile(filepath.Join("..", "..", "..", "..", "openapi", "openapi-3.0.yaml"))
	require.NoError(t, err)
	var out, errOut bytes.Buffer
	require.Equal(t, 0, cli.Run(context.Background(), []string{"openapi", "--spec-version", "3.0"}, envOf(nil), &out, &errOut), errOut.String())
	assert.Equal(t, string(committed), out.String())
	assert.Contains(t, out.String(), "openapi: 3.0.3")

	out.Reset()
	errOut.Reset()
	assert.Equal(t, 2, cli.Run(context.Background(), []string{"openapi", "--spec-version", "2.0"}, envOf(nil), &out, &errOut))
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), "--spec-version")
}
