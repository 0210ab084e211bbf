package api_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	rxRef = regexp.MustCompile(`(?:src|href|apiDescriptionUrl)="([^"]+)"`)
	rxURL = regexp.MustCompile(`(?i)\b(?:https?:)?//[a-z0-9.-]+`)
)

// /docs renders from the binary alone: the page names no external URL (neither in its HTML
// nor in its Content-Security-Policy), and every script, stylesheet and document it
// references loads from the gateway, the viewer byte-identical to the vendored files,
// plain and gzip-encoded.
func TestDocsLoadFromTheBinary(t *testing.T) {
	t.Parallel()
	srv, _ := newGateway(t, gatewayOptions{})
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	t.Cleanup(client.CloseIdleConnections)

	resp, err := client.Get(srv.URL + "/docs")
	require.NoError(t, err)
	page, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Equal(t, "text/html; charset=utf-8", resp.Header.Get("Content-Type"))
	assert.Empty(t, rxURL.FindAllString(string(page), -1), "no external URL in the page")
	csp := resp.Header.Get("Content-Security-Policy")
	assert.Contains(t, csp, "script-src 'self'")
	assert.Empty(t, rxURL.FindAllString(csp, -1), "no external origin in the CSP")

	refs := rxRef.FindAllStringSubmatch(string(page), -1)
	require.Len(t, refs, 3, "stylesheet, script and the OpenAPI document")
	base, _ := url.Parse(srv.URL + "/docs")
	for _, m := range refs {
		u, err := base.Parse(m[1])
		require.NoError(t, err)
		require.Equal(t, base.Host, u.Host, "%s resolves to the gateway", m[1])

		resp, err := client.Get(u.String())
		require.NoError(t, err)
		plain, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, resp.StatusCode, u.Path)
		if !strings.HasPrefix(u.Path, "/docs/assets/") {
			assert.Contains(t, string(plain), "openapi: 3.1.0", u.Path)
			continue
		}
		vendored, err := os.ReadFile(filepath.Join("docsui", "assets", filepath.Base(u.Path)))
		require.NoError(t, err)
		assert.True(t, bytes.Equal(vendored, plain), "%s is the vendored file", u.Path)
		assert.Greater(t, len(plain), 100_000, "%s is the real viewer, not a stub", u.Path)
		switch filepath.Ext(u.Path) {
		case ".js":
			assert.Contains(t, resp.Header.Get("Content-Type"), "javascript", u.Path)
		case ".css":
			assert.Contains(t, resp.Header.Get("Content-Type"), "text/css", u.Path)
		}

		req, _ := http.NewRequest(http.MethodGet, u.String(), nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err = client.Do(req)
		require.NoError(t, err)
		require.Equal(t, "gzip", resp.Header.Get("Content-Encoding"), u.Path)
		zr, err := gzip.NewReader(resp.Body)
		require.NoError(t, err)
		unzipped, err := io.ReadAll(zr)
		_ = resp.Body.Close()
		require.NoError(t, err)
		assert.True(t, bytes.Equal(vendored, unzipped), "%s gzip-decodes to the vendored file", u.Path)
	}

	resp, err = client.Get(srv.URL + "/docs/assets/no-such-file.js")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
}
