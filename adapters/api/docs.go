package api

import (
	"bytes"
	"compress/gzip"
	"embed"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

// DocsAssetsPath is where the embedded API reference viewer's files are served.
const DocsAssetsPath = DocsPath + "/assets/"

// docsAssets is Stoplight Elements (npm @stoplight/elements, the version in
// docsui/assets/VERSION, vendored by tools/docsui/vendor.sh): the /docs page loads it from
// the binary, so it renders in clusters without internet access.
//
//go:embed docsui/assets
var docsAssets embed.FS

// docsCSP keeps the page to the gateway's own origin: the viewer, its stylesheet and the
// OpenAPI document all come from here.
var docsCSP = strings.Join([]string{
	"default-src 'none'",
	"base-uri 'none'",
	"connect-src 'self'",
	"form-action 'none'",
	"frame-ancestors 'none'",
	"img-src 'self' data:",
	"font-src 'self' data:",
	"script-src 'self'",
	"style-src 'self' 'unsafe-inline'",
}, "; ")

// docsPage references the assets and the document by paths relative to /docs, so the page
// also works behind a reverse proxy that mounts the gateway under a prefix.
const docsPage = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <meta name="referrer" content="no-referrer">
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <title>smg API Reference</title>
    <link rel="stylesheet" href="docs/assets/styles.min.css">
    <script src="docs/assets/web-components.min.js"></script>
  </head>
  <body style="height: 100vh;">
    <elements-api
      apiDescriptionUrl="openapi.yaml"
      router="hash"
      layout="sidebar"
      tryItCredentialsPolicy="same-origin"
    ></elements-api>
  </body>
</html>
`

// mountDocs serves GET /docs (the viewer page) and GET /docs/assets/<file> (the embedded
// viewer, gzip-encoded when the client accepts it) on mux.
func mountDocs(mux *http.ServeMux) {
	mux.HandleFunc("GET "+DocsPath, func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Content-Security-Policy", docsCSP)
		_, _ = w.Write([]byte(docsPage))
	})
	sub, _ := fs.Sub(docsAssets, "docsui/assets")
	a := &assets{fsys: sub}
	mux.Handle("GET "+DocsAssetsPath+"{file}", a)
}

// assets serves the embedded files, each gzip-compressed once on first request.
type assets struct {
	fsys fs.FS
	mu   sync.Mutex
	gz   map[string][]byte
}

func (a *assets) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("file")
	raw, err := fs.ReadFile(a.fsys, name)
	if err != nil || !fs.ValidPath(name) {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	ct := mime.TypeByExtension(path.Ext(name))
	if ct == "" {
		ct = "text/plain; charset=utf-8"
	}
	h.Set("Content-Type", ct)
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Add("Vary", "Accept-Encoding")
	body := raw
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		body = a.gzipped(name, raw)
		h.Set("Content-Encoding", "gzip")
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
}

func (a *assets) gzipped(name string, raw []byte) []byte {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.gz[name]; ok {
		return b
	}
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	_, _ = zw.Write(raw)
	_ = zw.Close()
	if a.gz == nil {
		a.gz = map[string][]byte{}
	}
	a.gz[name] = buf.Bytes()
	return a.gz[name]
}
