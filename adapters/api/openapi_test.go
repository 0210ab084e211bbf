package api_test

import (
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/api"
)

var update = flag.Bool("update", false, "rewrite openapi/openapi.yaml from the served document")

var committed = filepath.Join("..", "..", "openapi", "openapi.yaml")

// TestServedOpenAPIMatchesCommittedFile fails when the API changed without regenerating the
// committed document: run `smg openapi` (or `go test ./adapters/api -run OpenAPI -update`).
func TestServedOpenAPIMatchesCommittedFile(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	resp, err := http.Get(srv.URL + "/openapi.yaml")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	served, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	offline, err := api.OpenAPIYAML()
	require.NoError(t, err)
	assert.Equal(t, string(offline), string(served), "OpenAPIYAML() must equal the served document")

	if *update {
		require.NoError(t, os.WriteFile(committed, served, 0o644))
	}
	want, err := os.ReadFile(committed)
	require.NoError(t, err, "openapi/openapi.yaml is missing: run `go test ./adapters/api -run OpenAPI -update`")
	assert.Equal(t, string(want), string(served),
		"openapi/openapi.yaml is stale: run `smg openapi` or `go test ./adapters/api -run OpenAPI -update`")
}

func TestOpenAPIDocumentBasics(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	for _, path := range []string{"/openapi.json", "/openapi.yaml", "/docs"} {
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
	_ = httptest.NewRecorder
}
