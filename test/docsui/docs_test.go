// Package docsui_test loads the gateway's API reference (/docs) in headless Debian Chromium:
// the viewer must render the document's overview text intact and send Try-It requests to the
// origin that served the page.
package docsui_test

import (
	"bytes"
	"context"
	"html"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// EnvScreenshot names a file the test writes its /docs screenshot to (PNG), to look at.
const EnvScreenshot = "SMG_DOCSUI_SCREENSHOT"

// chromiumPath finds Debian's chromium; the test skips without it, or fails under CI=true
// (.ci/run installs it), so CI never passes without having run it.
func chromiumPath(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("chromium")
	if err != nil {
		msg := "chromium is not installed (apt-get install chromium): /docs browser test skipped"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return p
}

// chromium runs one headless Chromium with no profile, network services or GPU, loading
// pageURL with mode (--dump-dom for the rendered DOM on stdout, --screenshot=<file> for a
// PNG) and a virtual-time budget for the viewer's scripts to render, and returns its stdout.
func chromium(t *testing.T, bin, pageURL string, mode ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-first-run", "--no-default-browser-check",
		"--user-data-dir=" + t.TempDir(), "--window-size=1280,1000", "--virtual-time-budget=3000",
	}, mode...)
	args = append(args, pageURL)
	cmd := exec.CommandContext(ctx, bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Errorf("chromium %s: %v: %s", pageURL, err, stderr.String())
	}
	return stdout.Bytes()
}

var (
	rxStyle = regexp.MustCompile(`(?s)<(style|script)[^>]*>.*?</(style|script)>`)
	rxTags  = regexp.MustCompile(`<[^>]*>`)
)

// text is the page's visible text: styles, scripts and tags dropped, entities decoded,
// spaces collapsed.
func text(dom []byte) string {
	s := rxStyle.ReplaceAllString(string(dom), " ")
	s = rxTags.ReplaceAllString(s, " ")
	return strings.Join(strings.Fields(html.UnescapeString(s)), " ")
}

// The overview renders the whole API description (the <text>/<CODE> placeholders of the
// admin error body shown as code, not swallowed as HTML tags), and an operation's Try-It
// targets the page's own origin, not a fixed localhost:30000.
func TestDocsRenderInChromium(t *testing.T) {
	bin := chromiumPath(t)
	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 1, Decodes: 1})
	origin := f.Gateway.URL
	u, err := url.Parse(origin)
	require.NoError(t, err)
	require.Equal(t, "127.0.0.1", u.Hostname(), "loopback only")

	shot := os.Getenv(EnvScreenshot)
	if shot == "" {
		shot = filepath.Join(t.TempDir(), "docs.png")
	}
	// The two pages load in two browsers at once: most of each run is Chromium starting.
	var overview, op string
	var wg sync.WaitGroup
	wg.Go(func() { overview = text(chromium(t, bin, origin+"/docs", "--dump-dom", "--screenshot="+shot)) })
	wg.Go(func() { op = text(chromium(t, bin, origin+"/docs#/operations/list-models", "--dump-dom")) })
	wg.Wait()
	for _, want := range []string{
		"smg, a prefill/decode disaggregation gateway for LLM engines",
		`errors use {"error":"<text>","code":"<CODE>"}`,
		"liveness, readiness and the model list.",
	} {
		assert.Contains(t, overview, want, "the overview text is intact")
	}
	assert.Contains(t, op, "Send API Request", "the operation page has its Try-It panel")
	assert.Contains(t, op, "--url "+origin+"/v1/models", "Try-It's request targets the page's origin")
	assert.NotContains(t, op, "localhost:30000")

	png, err := os.ReadFile(shot)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")), "a PNG screenshot")
	assert.Greater(t, len(png), 20_000, "the screenshot shows a rendered page, not a blank one")
}
