package deploycheck

import (
	"encoding/json"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// Gateway defaults (README "Shutdown"; app/config): used when a file does not set the flag.
const (
	defaultDrainSecs = 5
	defaultGraceSecs = 180
)

var secsFlag = regexp.MustCompile(`^--(shutdown-drain-delay-secs|shutdown-grace-period-secs)(?:=(.*))?$`)

// shutdownFlags reads the drain delay and grace period (whole seconds) from a launch command
// line, in --flag=value or --flag value form, falling back to the gateway's defaults.
func shutdownFlags(t *testing.T, args []string) (drain, grace int) {
	t.Helper()
	drain, grace = defaultDrainSecs, defaultGraceSecs
	for i := 0; i < len(args); i++ {
		m := secsFlag.FindStringSubmatch(args[i])
		if m == nil {
			continue
		}
		v := m[2]
		if !strings.Contains(args[i], "=") {
			if i+1 >= len(args) {
				t.Fatalf("%s has no value", args[i])
			}
			i++
			v = args[i]
		}
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("%s: %v", m[1], err)
		}
		if m[1] == "shutdown-drain-delay-secs" {
			drain = n
		} else {
			grace = n
		}
	}
	return drain, grace
}

// ECS sends SIGKILL stopTimeout seconds after SIGTERM (at most 120 s on Fargate): it must
// cover drain + grace + 5 s, and the container health check must run `smg probe` (no shell
// in the image).
func TestECSStopTimeoutCoversTheDrain(t *testing.T) {
	b, err := os.ReadFile("../../deploy/ecs/task-definition.json")
	if err != nil {
		t.Fatal(err)
	}
	var td struct {
		ContainerDefinitions []struct {
			Name        string   `json:"name"`
			Command     []string `json:"command"`
			StopTimeout int      `json:"stopTimeout"`
			HealthCheck struct {
				Command []string `json:"command"`
			} `json:"healthCheck"`
			LogConfiguration struct {
				LogDriver string `json:"logDriver"`
			} `json:"logConfiguration"`
		} `json:"containerDefinitions"`
	}
	if err := json.Unmarshal(b, &td); err != nil {
		t.Fatal(err)
	}
	if len(td.ContainerDefinitions) != 1 {
		t.Fatalf("want one container, got %d", len(td.ContainerDefinitions))
	}
	c := td.ContainerDefinitions[0]
	drain, grace := shutdownFlags(t, c.Command)
	if c.StopTimeout > 120 {
		t.Fatalf("stopTimeout %d exceeds Fargate's 120 s", c.StopTimeout)
	}
	if c.StopTimeout < drain+grace+5 {
		t.Fatalf("stopTimeout %d < drain %d + grace %d + 5", c.StopTimeout, drain, grace)
	}
	hc := strings.Join(c.HealthCheck.Command, " ")
	if !strings.HasPrefix(hc, "CMD /usr/local/bin/smg probe") {
		t.Fatalf("health check %q must exec smg probe (CMD form, no shell)", hc)
	}
	if c.LogConfiguration.LogDriver == "" {
		t.Fatal("a log configuration is required")
	}
}

func TestDockerfileHealthCheckUsesProbe(t *testing.T) {
	b, err := os.ReadFile("../../deploy/Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^HEALTHCHECK .*\\\n\s*CMD \["/usr/local/bin/smg", "probe"`)
	if !re.Match(b) {
		t.Fatal(`deploy/Dockerfile needs HEALTHCHECK ... CMD ["/usr/local/bin/smg", "probe", ...]`)
	}
}
