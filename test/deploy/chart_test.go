package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/smg-go/smg/adapters/discovery/kubernetes/k8stest"
	"github.com/smg-go/smg/app/registry"
)

// The chart's tools as deploy/deploy.mk builds them (HELM_VERSION, K8S_VERSION).
const (
	helmVersion = "v3.22.0"
	kubeVersion = "1.37.2"
	chartDir    = "../../deploy/helm/smg"
)

// helm is the helm binary `make tools` (and `make test`) builds into
// <user cache>/smg-tools/helm-<version>/, or $SMG_HELM. Without it the test is skipped, unless
// SMG_REQUIRE_K8S is set (.ci/run sets it, as for the API server's binaries): then it fails.
func helm(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("SMG_HELM")
	if bin == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		bin = filepath.Join(cache, "smg-tools", "helm-"+helmVersion, "helm")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("SMG_REQUIRE_K8S") != "" {
			t.Fatalf("helm missing at %s: run make tools", bin)
		}
		t.Skipf("helm missing at %s: run make tools (with SMG_REQUIRE_K8S set, as .ci/run sets it, this fails instead)", bin)
	}
	return bin
}

// renderChart runs `helm template smg deploy/helm/smg --namespace smg` (as make deploy-render
// does) with the default values plus values (YAML), and returns the objects by kind and name.
func renderChart(t *testing.T, bin, values string) map[string]*unstructured.Unstructured {
	t.Helper()
	dir := t.TempDir()
	vf := filepath.Join(dir, "values.yaml")
	require.NoError(t, os.WriteFile(vf, []byte(values), 0o600))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "template", "smg", chartDir, "--namespace", renderNS,
		"--kube-version", kubeVersion, "-f", vf)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(dir, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(dir, "config"), "HELM_DATA_HOME="+filepath.Join(dir, "data"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "helm template: %s", stderr.String())
	f := filepath.Join(dir, "rendered.yaml")
	require.NoError(t, os.WriteFile(f, out, 0o600))
	objs := map[string]*unstructured.Unstructured{}
	for _, o := range objects(t, f) {
		objs[o.GetKind()+"/"+o.GetName()] = o
	}
	return objs
}

// typed converts a rendered object into its API type.
func typed[T any](t *testing.T, objs map[string]*unstructured.Unstructured, key string) *T {
	t.Helper()
	o, ok := objs[key]
	require.True(t, ok, "the chart renders no %s", key)
	b, err := json.Marshal(o.Object)
	require.NoError(t, err, key)
	var v T
	require.NoError(t, json.Unmarshal(b, &v), key)
	return &v
}

// oneWorker is the workers-file entry the test adds to the default values; the flow test
// substitutes a simulated decode for its host.
const oneWorker = `
workersFile:
  workers:
    - url: http://vllm-decode-1.inference:8000
      worker_type: decode
      kv_connector: NixlConnector
`

// withRedis points the release at a Redis with its own key prefix (redis.url,
// redis.keyPrefix); the flow test substitutes the test's Redis and a fresh prefix.
const withRedis = `
redis:
  url: redis://redis.inference:6379/0
  keyPrefix: "smg-chart:"
`

// arg returns the value of --name=value in args, and whether it is there.
func arg(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// The chart with its default values plus one workers-file entry, applied to a real
// kube-apiserver: the API accepts every object (strict field validation), the Services and
// the Deployment select the pods the template labels, the admin Service publishes not-ready
// addresses on the gateway's port, the workers file reaches --workers-file through the
// ConfigMap and its mount, and the pods' readiness passes while no worker is registered.
func TestChartAppliesWithAWorkersFile(t *testing.T) {
	bin := helm(t)
	objs := renderChart(t, bin, oneWorker)
	cfg := k8stest.Start(t)
	applied := applyAll(t, cfg, objs)

	dep := typed[appsv1.Deployment](t, applied, "Deployment/smg")
	pod := dep.Spec.Template
	require.Len(t, pod.Spec.Containers, 1)
	c := pod.Spec.Containers[0]
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	require.NoError(t, err)
	assert.True(t, sel.Matches(labels.Set(pod.Labels)), "the Deployment selects its pods")
	require.NotNil(t, dep.Spec.Strategy.RollingUpdate)
	assert.Equal(t, 0, dep.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue(), "rollouts keep every replica until its successor is ready")

	httpPort := int32(0)
	for _, p := range c.Ports {
		if p.Name == "http" {
			httpPort = p.ContainerPort
		}
	}
	port, ok := arg(c.Args, "--port")
	require.True(t, ok, "args %v", c.Args)
	require.Equal(t, port, strconv.Itoa(int(httpPort)), "the http container port is the gateway's --port")

	// Readiness: /readiness on the gateway port, and an empty gateway reports ready
	// (--ready-without-workers), so `helm install --wait` completes with no workers.
	require.NotNil(t, c.ReadinessProbe)
	assert.Equal(t, "/readiness", c.ReadinessProbe.HTTPGet.Path)
	assert.Equal(t, "http", c.ReadinessProbe.HTTPGet.Port.String())
	assert.Contains(t, c.Args, "--ready-without-workers")

	for _, name := range []string{"smg", "smg-admin"} {
		svc := typed[corev1.Service](t, applied, "Service/"+name)
		assert.True(t, labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(pod.Labels)), "Service %s selects the gateway pods", name)
		var hp *corev1.ServicePort
		for i := range svc.Spec.Ports {
			if svc.Spec.Ports[i].Name == "http" {
				hp = &svc.Spec.Ports[i]
			}
		}
		require.NotNil(t, hp, "Service %s has an http port", name)
		assert.Equal(t, "http", hp.TargetPort.String(), "Service %s targets the named gateway port", name)
		assert.Equal(t, name == "smg-admin", svc.Spec.PublishNotReadyAddresses,
			"only the admin Service reaches not-ready replicas")
	}

	// The workers file: ConfigMap -> volume -> mount -> --workers-file, and its content is a
	// valid --workers-file holding the one entry.
	file, ok := arg(c.Args, "--workers-file")
	require.True(t, ok, "args %v", c.Args)
	var mount *corev1.VolumeMount
	for i := range c.VolumeMounts {
		if strings.HasPrefix(file, c.VolumeMounts[i].MountPath+"/") {
			mount = &c.VolumeMounts[i]
		}
	}
	require.NotNil(t, mount, "--workers-file %s is under a mount", file)
	assert.True(t, mount.ReadOnly)
	assert.Empty(t, mount.SubPath, "a subPath mount would never see ConfigMap updates")
	idx := slices.IndexFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == mount.Name })
	require.GreaterOrEqual(t, idx, 0)
	vol := pod.Spec.Volumes[idx]
	require.NotNil(t, vol.ConfigMap, "the workers volume is a ConfigMap")
	cm := typed[corev1.ConfigMap](t, applied, "ConfigMap/"+vol.ConfigMap.Name)
	key := strings.TrimPrefix(file, mount.MountPath+"/")
	require.Len(t, vol.ConfigMap.Items, 1)
	assert.Equal(t, corev1.KeyToPath{Key: key, Path: key}, vol.ConfigMap.Items[0])
	specs, err := registry.ParseWorkersFile([]byte(cm.Data[key]))
	require.NoError(t, err, "%s", cm.Data[key])
	require.Len(t, specs, 1)
	w, err := specs[0].Build()
	require.NoError(t, err)
	assert.Equal(t, "http://vllm-decode-1.inference:8000", w.URL)
}

// applyAll creates every object in the namespace renderNS with strict field validation and
// returns them as the API server stored them.
func applyAll(t *testing.T, cfg *rest.Config, objs map[string]*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: renderNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	create := creator(t, cfg, metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict})
	out := map[string]*unstructured.Unstructured{}
	for k, o := range objs {
		got, err := create(ctx, o)
		require.NoError(t, err, k)
		out[k] = got
	}
	return out
}
