package api_test

import (
	"flag"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
)

var update = flag.Bool("update", false, "rewrite openapi/openapi.yaml and openapi-3.0.yaml from the served documents")

// TestServedOpenAPIMatchesCommittedFile fails when the API changed without regenerating the
// committed documents: run `make openapi` (or `go test ./adapters/api -run OpenAPI -update`).
func TestServedOpenAPIMatchesCommittedFile(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	for _, c := range []struct {
		path, file string
		offline    func() ([]byte, error)
	}{
		{"/openapi.yaml", "openapi.yaml", api.OpenAPIYAML},
		{"/openapi-3.0.yaml", "openapi-3.0.yaml", api.OpenAPI30YAML},
	} {
		resp, err := http.Get(srv.URL + c.path)
		require.NoError(t, err)
		served, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, c.path)

		offline, err := c.offline()
		require.NoError(t, err)
		assert.Equal(t, string(offline), string(served), "the offline document must equal the served %s", c.path)

		committed := filepath.Join("..", "..", "openapi", c.file)
		if *update {
			require.NoError(t, os.WriteFile(committed, served, 0o644))
		}
		want, err := os.ReadFile(committed)
		require.NoError(t, err, "openapi/%s is missing: run `make openapi`", c.file)
		assert.Equal(t, string(want), string(served),
			"openapi/%s is stale: run `make openapi` or `go test ./adapters/api -run OpenAPI -update`", c.file)
	}
}

func TestOpenAPIDocumentBasics(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	for _, path := range []string{"/openapi.json", "/openapi.yaml", "/openapi-3.0.json", "/openapi-3.0.yaml", "/docs"} {
		resp, err := http.Get(srv.URL + path)
		require.NoError(t, err)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
	}
	doc, err := api.OpenAPIYAML()
	require.NoError(t, err)
	s := string(doc)
	assert.Contains(t, s, "openapi: 3.1.0")
	assert.Contains(t, s, "title: smg")
	for _, id := range []string{"add-worker", "list-workers", "get-worker", "remove-worker", "health", "liveness", "readiness", "list-models"} {
		assert.Contains(t, s, "operationId: "+id)
	}
	assert.NotContains(t, s, `"422"`)
}
