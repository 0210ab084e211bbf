package deploycheck

import (
	"context"
	"os"
	"strings"
	"testing"

	"knative.dev/pkg/apis"
	"knative.dev/serving/pkg/apis/config"
	servingv1 "knative.dev/serving/pkg/apis/serving/v1"
	autoscalerconfig "knative.dev/serving/pkg/autoscaler/config"
	"sigs.k8s.io/yaml"
)

const cloudRunFile = "../../deploy/cloudrun/service.yaml"

// cloudRunContext carries Cloud Run's limits where they differ from OSS Knative's defaults:
// a request may run 3600 s (Knative's default maximum is 600 s).
func cloudRunContext(t *testing.T) context.Context {
	t.Helper()
	d, err := config.NewDefaultsConfigFromMap(map[string]string{"max-revision-timeout-seconds": "3600"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := config.NewFeaturesConfigFromMap(nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := autoscalerconfig.NewConfigFromMap(nil)
	if err != nil {
		t.Fatal(err)
	}
	return config.ToContext(apis.WithinCreate(context.Background()), &config.Config{Defaults: d, Features: f, Autoscaler: a})
}

// validateCloudRun strictly decodes b and runs Knative's webhook validation. Cloud Run takes
// IAM e-mail service accounts, which Knative rejects as Kubernetes names, so an "@" account
// is replaced by a placeholder first.
func validateCloudRun(t *testing.T, b []byte) (*servingv1.Service, error) {
	t.Helper()
	var svc servingv1.Service
	if err := yaml.UnmarshalStrict(b, &svc); err != nil {
		return nil, err
	}
	if strings.Contains(svc.Spec.Template.Spec.ServiceAccountName, "@") {
		svc.Spec.Template.Spec.ServiceAccountName = "cloud-run-iam-account"
	}
	ctx := cloudRunContext(t)
	svc.SetDefaults(ctx)
	if err := svc.Validate(ctx).Filter(apis.ErrorLevel); err != nil {
		return &svc, err
	}
	return &svc, nil
}

func TestCloudRunServiceValidates(t *testing.T) {
	b, err := os.ReadFile(cloudRunFile)
	if err != nil {
		t.Fatal(err)
	}
	svc, err := validateCloudRun(t, b)
	if err != nil {
		t.Fatalf("%s: %v", cloudRunFile, err)
	}
	spec := svc.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	if c.StartupProbe == nil || c.StartupProbe.HTTPGet == nil || c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil {
		t.Fatal("the container needs HTTP startup and liveness probes")
	}
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
		t.Fatalf("Cloud Run's PORT is 8080; the container declares %v", c.Ports)
	}
	for _, e := range c.Env {
		if e.Name == "PORT" {
			t.Fatal("PORT is set by Cloud Run and must not be in env")
		}
	}
	if spec.ContainerConcurrency == nil || *spec.ContainerConcurrency < 1 {
		t.Fatal("containerConcurrency must be set")
	}
	if got := svc.Spec.Template.Annotations["autoscaling.knative.dev/minScale"]; got == "" || got == "0" {
		t.Fatalf("min instances must be at least 1, got %q", got)
	}
	drain, grace := shutdownFlags(t, c.Args)
	// Cloud Run sends SIGKILL 10 s after SIGTERM; the gateway needs drain + grace + ~2 s.
	if drain+grace+2 > 10 {
		t.Fatalf("drain %d s + grace %d s + 2 s exceeds Cloud Run's 10 s stop window", drain, grace)
	}
}

// The validator must reject what Cloud Run would: these mutations of the real file each fail.
func TestCloudRunValidationCatchesMistakes(t *testing.T) {
	good, err := os.ReadFile(cloudRunFile)
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(string) string{
		"unknown field": func(s string) string { return strings.Replace(s, "containerPort: 8080", "containerPortz: 8080", 1) },
		"negative concurrency": func(s string) string {
			return strings.Replace(s, "containerConcurrency: 1000", "containerConcurrency: -1", 1)
		},
		"timeout over 3600 s": func(s string) string { return strings.Replace(s, "timeoutSeconds: 3600", "timeoutSeconds: 99999", 1) },
		"traffic not 100 %":   func(s string) string { return strings.Replace(s, "percent: 100", "percent: 90", 1) },
	} {
		bad := mutate(string(good))
		if bad == string(good) {
			t.Fatalf("%s: the mutation did not apply", name)
		}
		if _, err := validateCloudRun(t, []byte(bad)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
