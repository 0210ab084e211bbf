package deploycheck

import (
	"bytes"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// deployment is the part of the rendered Deployment these checks read.
type deployment struct {
	Kind string `json:"kind"`
	Spec struct {
		Template struct {
			Spec struct {
				TerminationGracePeriodSeconds int `json:"terminationGracePeriodSeconds"`
				Containers                    []struct {
					Args           []string `json:"args"`
					ReadinessProbe struct {
						HTTPGet struct {
							Path string `json:"path"`
						} `json:"httpGet"`
					} `json:"readinessProbe"`
					LivenessProbe struct {
						HTTPGet struct {
							Path string `json:"path"`
						} `json:"httpGet"`
					} `json:"livenessProbe"`
					Lifecycle *struct {
						PreStop struct {
							Sleep struct {
								Seconds int `json:"seconds"`
							} `json:"sleep"`
						} `json:"preStop"`
					} `json:"lifecycle"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// The plain manifests (rendered from the chart, checked equal by make deploy-check): the pod's
// SIGKILL deadline covers preStop + drain + grace + 5 s, and the probes hit /readiness and
// /liveness (README "Shutdown").
func TestRenderedDeploymentMatchesTheDrain(t *testing.T) {
	b, err := os.ReadFile("../../deploy/k8s/smg.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, doc := range bytes.Split(b, []byte("\n---\n")) {
		var d deployment
		if err := yaml.Unmarshal(doc, &d); err != nil {
			t.Fatal(err)
		}
		if d.Kind != "Deployment" {
			continue
		}
		found = true
		ps := d.Spec.Template.Spec
		if len(ps.Containers) != 1 {
			t.Fatalf("want one container, got %d", len(ps.Containers))
		}
		c := ps.Containers[0]
		drain, grace := shutdownFlags(t, c.Args)
		preStop := 0
		if c.Lifecycle != nil {
			preStop = c.Lifecycle.PreStop.Sleep.Seconds
		}
		if want := preStop + drain + grace + 5; ps.TerminationGracePeriodSeconds != want {
			t.Fatalf("terminationGracePeriodSeconds %d, want preStop %d + drain %d + grace %d + 5 = %d",
				ps.TerminationGracePeriodSeconds, preStop, drain, grace, want)
		}
		if c.ReadinessProbe.HTTPGet.Path != "/readiness" || c.LivenessProbe.HTTPGet.Path != "/liveness" {
			t.Fatalf("probes: readiness %q, liveness %q", c.ReadinessProbe.HTTPGet.Path, c.LivenessProbe.HTTPGet.Path)
		}
	}
	if !found {
		t.Fatal("no Deployment in deploy/k8s/smg.yaml")
	}
}
