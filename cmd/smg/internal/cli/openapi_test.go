package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
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

// `smg openapi --format json` prints the JSON document (the one GET /openapi.json serves);
// `-o x.json` writes JSON without --format, --format wins over the extension, and an
// unknown format is a usage error (exit 2).
func TestOpenAPIFormat(t *testing.T) {
	t.Parallel()
	want, err := api.OpenAPIJSON()
	require.NoError(t, err)
	want30, err := api.OpenAPI30JSON()
	require.NoError(t, err)
	yaml31, err := api.OpenAPIYAML()
	require.NoError(t, err)
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string
		file string // written file, "" for stdout
		want []byte
	}{
		{"stdout json", []string{"openapi", "--format", "json"}, "", want},
		{"stdout 3.0 json", []string{"openapi", "--format", "json", "--spec-version", "3.0"}, "", want30},
		{"json by extension", []string{"openapi", "-o", filepath.Join(dir, "a.json")}, "a.json", want},
		{"JSON by extension", []string{"openapi", "-o", filepath.Join(dir, "b.JSON")}, "b.JSON", want},
		{"format beats extension", []string{"openapi", "--format", "yaml", "-o", filepath.Join(dir, "c.json")}, "c.json", yaml31},
		{"yaml by default", []string{"openapi", "-o", filepath.Join(dir, "d.txt")}, "d.txt", yaml31},
	} {
		var out, errOut bytes.Buffer
		require.Equal(t, 0, cli.Run(context.Background(), c.args, envOf(nil), &out, &errOut), "%s: %s", c.name, errOut.String())
		got := out.Bytes()
		if c.file != "" {
			got, err = os.ReadFile(filepath.Join(dir, c.file))
			require.NoError(t, err, c.name)
			assert.Empty(t, out.String(), c.name)
		}
		assert.Equal(t, string(c.want), string(got), c.name)
	}
	assert.True(t, json.Valid(want), "the JSON document parses")
	assert.Contains(t, string(want), `"openapi":"3.1.0"`)
	assert.Contains(t, string(want30), `"openapi":"3.0.3"`)

	var out, errOut bytes.Buffer
	assert.Equal(t, 2, cli.Run(context.Background(), []string{"openapi", "--format", "xml"}, envOf(nil), &out, &errOut))
	assert.Empty(t, out.String())
	assert.Contains(t, errOut.String(), "--format")
}
