package deploycheck

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

const composeFile = "../../deploy/compose/compose.yaml"

// loadCompose loads a Compose file the way `docker compose config` does (compose-go: the
// Compose specification's JSON schema, then normalisation), with no environment.
func loadCompose(t *testing.T, path string) *types.Project {
	t.Helper()
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	details, err := loader.LoadConfigFiles(context.Background(), []string{abs}, filepath.Dir(abs))
	if err != nil {
		t.Fatal(err)
	}
	details.Environment = types.Mapping{}
	p, err := loader.LoadWithContext(context.Background(), *details, func(o *loader.Options) {
		o.SkipResolveEnvironment = true
	})
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return p
}

// The Compose example validates against the Compose specification, builds the image from
// deploy/Dockerfile at the repository root, and gives the gateway a stop_grace_period of at
// least drain + grace + 5 s (Docker's default is 10 s, which would cut streams mid-drain).
func TestComposeStopGracePeriodCoversTheDrain(t *testing.T) {
	p := loadCompose(t, composeFile)
	gw, ok := p.Services["gateway"]
	if !ok {
		t.Fatal("no gateway service")
	}
	if gw.Build == nil || gw.Build.Dockerfile != "deploy/Dockerfile" {
		t.Fatalf("gateway must build deploy/Dockerfile, got %+v", gw.Build)
	}
	root, _ := filepath.Abs("../..")
	if gw.Build.Context != root {
		t.Fatalf("build context %q, want the repository root %q", gw.Build.Context, root)
	}
	drain, grace := shutdownFlags(t, gw.Command)
	need := time.Duration(drain+grace+5) * time.Second
	if gw.StopGracePeriod == nil {
		t.Fatalf("gateway has no stop_grace_period (Docker's 10 s default < drain %d + grace %d + 5)", drain, grace)
	}
	if got := time.Duration(*gw.StopGracePeriod); got < need {
		t.Fatalf("stop_grace_period %s < drain %d + grace %d + 5 s", got, drain, grace)
	}
	for name, s := range p.Services {
		if s.HealthCheck == nil && name != "gateway" {
			t.Errorf("%s: the image's HEALTHCHECK probes the gateway's port; a simulator needs its own", name)
		}
		if s.HealthCheck != nil && !strings.HasPrefix(strings.Join(s.HealthCheck.Test, " "), "CMD /usr/local/bin/smg probe") {
			t.Errorf("%s: health check %q must exec smg probe (no shell in the image)", name, s.HealthCheck.Test)
		}
	}
}

// A Compose file that keeps Docker's default stop_grace_period, or sets one shorter than the
// drain, is refused.
func TestComposeCheckRefusesAShortStopGracePeriod(t *testing.T) {
	b, err := os.ReadFile(composeFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, from, to string }{
		{"default", "    stop_grace_period: 190s\n", ""},
		{"short", "stop_grace_period: 190s", "stop_grace_period: 60s"},
		{"grace raised", "--shutdown-grace-period-secs=180", "--shutdown-grace-period-secs=600"},
	} {
		mutated := strings.Replace(string(b), c.from, c.to, 1)
		if mutated == string(b) {
			t.Fatalf("%s: %q not found in %s", c.name, c.from, composeFile)
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "compose.yaml")
		if err := os.WriteFile(path, []byte(mutated), 0o644); err != nil {
			t.Fatal(err)
		}
		p := loadCompose(t, path)
		gw := p.Services["gateway"]
		drain, grace := shutdownFlags(t, gw.Command)
		if gw.StopGracePeriod != nil && time.Duration(*gw.StopGracePeriod) >= time.Duration(drain+grace+5)*time.Second {
			t.Errorf("%s: the check would pass", c.name)
		}
	}
}

// The build context leaves out what the image does not need: the tokenizer fixtures and tool
// caches under .cache/ (hundreds of MB), binaries and VCS data.
func TestDockerignoreExcludesCaches(t *testing.T) {
	f, err := os.Open("../../deploy/Dockerfile.dockerignore")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	have := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			have[line] = true
		}
	}
	for _, want := range []string{".cache/", ".git/", "bin/", "node_modules/"} {
		if !have[want] {
			t.Errorf("deploy/Dockerfile.dockerignore does not exclude %s", want)
		}
	}
}
