package fleet

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// BuildSMG builds the gateway binary (cmd/smg) into a fresh temporary directory, for tests
// that run real `smg` processes (start-up refusals, several instances sharing one Redis).
// It returns the binary's path and a cleanup func that removes the directory. The go tool's
// output goes to stderr, so a build failure is visible in the test log.
func BuildSMG() (bin string, cleanup func(), err error) {
	dir, err := os.MkdirTemp("", "smg-bin-")
	if err != nil {
		return "", nil, fmt.Errorf("temp dir: %w", err)
	}
	cleanup = func() { _ = os.RemoveAll(dir) }
	bin = filepath.Join(dir, "smg")
	build := exec.Command("go", "build", "-o", bin, "github.com/smg-go/smg/cmd/smg")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("go build cmd/smg: %w", err)
	}
	return bin, cleanup, nil
}
