package fleetbench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
)

// EnsureBinaries makes sure dir holds smg and smg-sim: with rebuild, or when one is missing,
// it runs `go build -o dir/<name> github.com/smg-go/smg/cmd/<name>` (the working directory
// must be inside the module), the go tool's output going to log. Errors name the binary.
func EnsureBinaries(dir string, rebuild bool, log io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, name := range []string{"smg", "smg-sim"} {
		bin := filepath.Join(dir, name)
		if _, err := os.Stat(bin); err == nil && !rebuild {
			continue
		}
		fmt.Fprintf(log, "building %s\n", bin)
		cmd := exec.Command("go", "build", "-o", bin, "github.com/smg-go/smg/cmd/"+name)
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("fleetbench: go build %s (run from inside the smg module, or build it with `make build`): %w", name, err)
		}
	}
	return nil
}
