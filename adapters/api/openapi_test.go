package api_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sync"
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

var (
	rxCodeSpan = regexp.MustCompile("`[^`]*`")
	rxHTMLish  = regexp.MustCompile(`<[A-Za-z/!]`)
)

// The /docs viewer renders every description as Markdown, where <text> outside a code span
// is an HTML tag that swallows what follows: no description has one. Every tag an operation
// uses is declared at the top level with a description.
func TestOpenAPIDescriptionsRenderAsText(t *testing.T) {
	t.Parallel()
	b, err := api.OpenAPIJSON()
	require.NoError(t, err)
	var doc map[string]any
	require.NoError(t, json.Unmarshal(b, &doc))

	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				if s, ok := c.(string); ok && k == "description" {
					assert.Empty(t, rxHTMLish.FindAllString(rxCodeSpan.ReplaceAllString(s, ""), -1),
						"%s/description has markup outside a code span: %q", path, s)
				}
				walk(path+"/"+k, c)
			}
		case []any:
			for i, c := range v {
				walk(fmt.Sprintf("%s/%d", path, i), c)
			}
		}
	}
	walk("#", doc)
	info := doc["info"].(map[string]any)
	assert.Contains(t, info["description"], "`{\"error\":\"<text>\",\"code\":\"<CODE>\"}`", "the admin error body is a code span")

	declared := map[string]bool{}
	tags, _ := doc["tags"].([]any)
	for _, tg := range tags {
		m := tg.(map[string]any)
		assert.NotEmpty(t, m["description"], "tag %v", m["name"])
		declared[m["name"].(string)] = true
	}
	for p, ops := range doc["paths"].(map[string]any) {
		for method, op := range ops.(map[string]any) {
			o := op.(map[string]any)
			assert.NotEmpty(t, o["description"], "%s %s has no description", method, p)
			for _, tg := range o["tags"].([]any) {
				assert.True(t, declared[tg.(string)], "%s %s: tag %v is not declared at the top level", method, p, tg)
			}
		}
	}
}

// The first requests for the documents may arrive together (two /docs pages, a browser and
// a generator): each is rendered once and served whole to all of them, with no data race
// (this test runs under -race in make test).
func TestOpenAPIDocumentsServedConcurrently(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	want := map[string]func() ([]byte, error){
		"/openapi.yaml": api.OpenAPIYAML, "/openapi.json": api.OpenAPIJSON,
		"/openapi-3.0.yaml": api.OpenAPI30YAML, "/openapi-3.0.json": api.OpenAPI30JSON,
	}
	var wg sync.WaitGroup
	got := make(chan [2]string, 4*len(want))
	for path := range want {
		for range 4 {
			wg.Go(func() {
				resp, err := http.Get(srv.URL + path)
				if err != nil {
					got <- [2]string{path, err.Error()}
					return
				}
				b, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				got <- [2]string{path, string(b)}
			})
		}
	}
	wg.Wait()
	close(got)
	for g := range got {
		doc, err := want[g[0]]()
		require.NoError(t, err)
		assert.Equal(t, string(doc), g[1], g[0])
	}
}
