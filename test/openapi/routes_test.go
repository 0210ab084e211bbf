package openapi_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
)

// document is the part of the served OpenAPI document these tests read.
type document struct {
	Paths map[string]map[string]struct {
		OperationID string `json:"operationId"`
	} `json:"paths"`
}

func served(t *testing.T, g *fleet.Gateway) document {
	t.Helper()
	r := g.Get(t, "/openapi.json")
	require.Equal(t, http.StatusOK, r.Status)
	var d document
	require.NoError(t, json.Unmarshal(r.Body, &d))
	return d
}

// Every data-plane route the dispatcher mounts is in the served document with its method.
func TestDispatcherRoutesAreDocumented(t *testing.T) {
	t.Parallel()
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	doc := served(t, g)
	routes := dispatch.New(dispatch.Deps{}).Routes()
	require.NotEmpty(t, routes)
	for _, r := range routes {
		method, path, ok := strings.Cut(r.Pattern, " ")
		require.True(t, ok, "pattern %q has a method", r.Pattern)
		ops, ok := doc.Paths[path]
		if assert.True(t, ok, "%s is not in the document", path) {
			assert.Contains(t, ops, strings.ToLower(method), "%s %s is not in the document", method, path)
		}
	}
}

// Every operation of the served document is mounted: a request reaches a handler, never the
// gateway's unmatched-route answers (404 not_found / NOT_FOUND, 405 method_not_allowed).
func TestDocumentedOperationsAreServed(t *testing.T) {
	t.Parallel()
	g := fleet.StartGateway(t, fleet.DefaultConfig())
	doc := served(t, g)
	n := 0
	for path, ops := range doc.Paths {
		concrete := strings.NewReplacer("{id}", "00000000-0000-0000-0000-000000000000").Replace(path)
		for method := range ops {
			n++
			ctx, cancel := context.WithTimeout(context.Background(), fleet.RequestTimeout)
			req, err := http.NewRequestWithContext(ctx, strings.ToUpper(method), g.URL+concrete, strings.NewReader("{}"))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/json")
			resp, err := g.Client.Do(req)
			require.NoError(t, err, "%s %s", method, path)
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			cancel()
			assert.NotEqual(t, http.StatusMethodNotAllowed, resp.StatusCode, "%s %s", method, path)
			if resp.StatusCode == http.StatusNotFound {
				// The worker API's own 404 is {"error":"<text>","code":"WORKER_NOT_FOUND"}.
				var workerErr struct {
					Code string `json:"code"`
				}
				_ = json.Unmarshal(body, &workerErr)
				code := resp.Header.Get(wire.HeaderErrorCode)
				routed := code == wire.CodeModelNotFound || workerErr.Code == wire.CodeWorkerNotFound
				assert.True(t, routed, "%s %s is documented but not routed: %s", method, path, body)
			}
		}
	}
	assert.Greater(t, n, 20, "the document lists the inference, admin and health operations")
}
