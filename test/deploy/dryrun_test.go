// Package deploy_test applies the plain Kubernetes manifests (deploy/k8s/smg.yaml, rendered
// from the Helm chart) to a real kube-apiserver with a server-side dry run and strict field
// validation: what `kubectl apply --dry-run=server --validate=strict` checks (schema, unknown
// and duplicate fields, admission), without a kubectl binary. The API server is the one the
// discovery tests start (adapters/discovery/kubernetes/k8stest; `make k8s-bins`).
package deploy_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	"github.com/smg-go/smg/adapters/discovery/kubernetes/k8stest"
)

// renderNS is the namespace the plain manifests are rendered for (deploy/deploy.mk RENDER_NS).
const renderNS = "smg"

func objects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err, path)
		if len(m) == 0 {
			continue
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
}

// creator returns a func that creates an object through the dynamic client with opts, in its
// own namespace or renderNS, and returns what the API server answered.
func creator(t *testing.T, cfg *rest.Config, opts metav1.CreateOptions) func(context.Context, *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return func(ctx context.Context, o *unstructured.Unstructured) (*unstructured.Unstructured, error) {
		gvk := o.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, err
		}
		r := dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ns := o.GetNamespace()
			if ns == "" {
				ns = renderNS
			}
			return r.Namespace(ns).Create(ctx, o, opts)
		}
		return r.Create(ctx, o, opts)
	}
}

// Every object of the committed manifests is accepted by the API server under a server-side
// dry run with strict field validation (nothing is stored), and a misspelt field is refused,
// so the check is live.
func TestManifestsPassServerSideDryRun(t *testing.T) {
	cfg := k8stest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: renderNS}}, metav1.CreateOptions{})
	require.NoError(t, err)
	opts := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationStrict}
	createObj := creator(t, cfg, opts)
	create := func(o *unstructured.Unstructured) error {
		_, err := createObj(ctx, o)
		return err
	}

	objs := objects(t, "../../deploy/k8s/smg.yaml")
	require.NotEmpty(t, objs)
	kinds := map[string]bool{}
	for _, o := range objs {
		require.NoError(t, create(o), "%s %s", o.GetKind(), o.GetName())
		kinds[o.GetKind()] = true
	}
	for _, k := range []string{"Deployment", "Service", "ConfigMap", "Role", "RoleBinding", "ServiceAccount"} {
		require.True(t, kinds[k], "deploy/k8s/smg.yaml has no %s", k)
	}
	sas, err := cs.CoreV1().ServiceAccounts(renderNS).List(ctx, metav1.ListOptions{})
	require.NoError(t, err)
	for _, sa := range sas.Items {
		require.NotEqual(t, "smg", sa.Name, "a dry run must store nothing")
	}

	// A misspelt field in the Deployment's container is refused under strict validation.
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		bad := o.DeepCopy()
		cs, _, _ := unstructured.NestedSlice(bad.Object, "spec", "template", "spec", "containers")
		c := cs[0].(map[string]any)
		c["imagePullPolcy"] = "Always"
		require.NoError(t, unstructured.SetNestedSlice(bad.Object, cs, "spec", "template", "spec", "containers"))
		err := create(bad)
		require.Error(t, err)
		require.Contains(t, err.Error(), "imagePullPolcy")
	}
}
