package mediamem_test

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/test/sim/grpcsim"
)

// A worker whose GetTokenizer bundle is a zip bomb under the 500 MiB total (a tokenizer.json
// of 120 MiB of zeros, about 120 KB zipped) is refused from the entry's declared compression
// ratio, before anything is inflated, and remembered: over seven requests (three in a row,
// then four at once) each worker is asked once, every request gets 500
// tokenizer_not_found naming the refusal, and the gateway's peak RSS stays under 600 MB.
// The simulators also report the directory as their tokenizer_path label, which the gateway
// can read on this machine: that 120 MiB file is read (and fails to parse) once per window too.
func TestZipBombBundleIsFetchedOncePerBackoff(t *testing.T) {
	bomb := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(bomb, "tokenizer.json"), make([]byte, 120<<20), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(bomb, "tokenizer_config.json"), []byte(`{}`), 0o644))
	var s [2]*grpcsim.Server
	for i, role := range []string{grpcsim.RolePrefill, grpcsim.RoleDecode} {
		srv, err := grpcsim.Start(grpcsim.Config{Engine: grpcsim.EngineSGLang, Role: role, Model: "bomb-model", TokenizerPath: bomb})
		require.NoError(t, err)
		t.Cleanup(func() { _ = srv.Close() })
		s[i] = srv
	}
	g := launch(t, nil, pdArgs(s[0], s[1])...)

	body := []byte(`{"model":"bomb-model","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	check := func(a answer) {
		t.Helper()
		require.NoError(t, a.err)
		assert.Equal(t, http.StatusInternalServerError, a.status, a.msg)
		assert.Equal(t, "tokenizer_not_found", a.code)
		assert.Contains(t, a.msg, "compression ratio above 100")
		assert.Contains(t, a.msg, "not asked again for")
		assert.Contains(t, a.msg, "not read again for")
	}
	for i := 0; i < 3; i++ {
		check(g.post(body))
	}
	for _, a := range parallel(g, [][]byte{body, body, body, body}) {
		check(a)
	}
	for _, w := range s {
		assert.EqualValues(t, 1, w.Stats().TokenizerRequests, "%s: one GetTokenizer within the backoff window (%s)", w.URL(), text.DefaultBundleBackoff)
	}
	peak := g.peakRSS(t)
	t.Logf("peak RSS %d MB", peak>>20)
	assert.Less(t, peak, int64(600<<20))
}
