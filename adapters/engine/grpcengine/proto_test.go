package grpcengine_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// protocVersionLine is the generated header line naming the protoc release; it differs
// between Debian releases without changing the code, so the comparison ignores it.
var protocVersionLine = regexp.MustCompile(`(?m)^// \s*protoc\s+.*$`)

// TestGeneratedCodeIsFresh regenerates the pb packages with tools/proto.sh (what
// `make proto` runs) into a temporary directory and fails when any committed file differs,
// is missing or is extra. It skips only when protoc is not installed, unless
// SMG_REQUIRE_PROTOC=1 (set by .ci/run, which installs protobuf-compiler).
func TestGeneratedCodeIsFresh(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		if os.Getenv("SMG_REQUIRE_PROTOC") == "1" {
			t.Fatal("protoc is not installed (apt-get install -y protobuf-compiler libprotobuf-dev)")
		}
		t.Skip("protoc is not installed; `make proto` and this check need protobuf-compiler")
	}
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	cmd := exec.Command(filepath.Join(root, "tools", "proto.sh"), out)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tools/proto.sh: %v\n%s", err, b)
	}
	committed := filepath.Join(root, "adapters", "engine", "grpcengine", "pb")
	want := generatedFiles(t, out)
	have := generatedFiles(t, committed)
	for rel, fresh := range want {
		old, ok := have[rel]
		if !ok {
			t.Errorf("pb/%s is not committed: run `make proto`", rel)
			continue
		}
		if !bytes.Equal(protocVersionLine.ReplaceAll(old, nil), protocVersionLine.ReplaceAll(fresh, nil)) {
			t.Errorf("pb/%s is stale relative to the .proto files: run `make proto`", rel)
		}
	}
	for rel := range have {
		if _, ok := want[rel]; !ok {
			t.Errorf("pb/%s is not generated from any .proto file: remove it", rel)
		}
	}
}

func generatedFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".go" {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
