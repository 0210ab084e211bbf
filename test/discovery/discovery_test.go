// Package discovery_test is the end-to-end suite of Kubernetes service discovery: a real
// kube-apiserver and etcd (adapters/discovery/kubernetes/k8stest; `make k8s-bins`), pods
// created and patched through the API (Running, Ready, a loopback pod IP 127.0.1.x, the
// seed's annotations), simulated vLLM engines really listening on those pod IPs, and an
// in-process gateway with --service-discovery whose /workers and data plane follow.
package discovery_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/smg-go/smg/adapters/discovery/kubernetes"
	"github.com/smg-go/smg/adapters/discovery/kubernetes/k8stest"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

func pod(name string, lbl, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl, Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "vllm:test"}}},
	}
}

func setStatus(t *testing.T, cs k8s.Interface, ns, name, ip string, ready corev1.ConditionStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// Issue "Replicas that share one fleet", Done when (real API server): pods matching the
// prefill and decode selectors, with the kv-connector annotations, become workers with the
// right role, port and connector and serve a NIXL handoff; a pod matching no selector is
// ignored; a pod marked not ready or deleted leaves rotation.
func TestDiscoveredPodsServeAndLeave(t *testing.T) {
	t.Parallel()
	kube := k8stest.Start(t)
	cs, err := k8s.NewForConfig(kube)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const ns = "inference"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)

	// The engines listen on the pods' IPs, one port for all (--service-discovery-port).
	pre := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill, Host: "127.0.1.1"})
	u, err := url.Parse(pre.URL())
	require.NoError(t, err)
	port, err := strconv.Atoi(u.Port())
	require.NoError(t, err)
	dec := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode, Host: "127.0.1.2", Port: port})
	nixl := map[string]string{kubernetes.AnnotationKVConnector: "NixlConnector"}
	for _, p := range []*corev1.Pod{
		pod("vllm-prefill-0", map[string]string{"app": "vllm", "role": "prefill"}, nixl),
		pod("vllm-decode-0", map[string]string{"app": "vllm", "role": "decode"}, nixl),
		pod("vllm-router-0", map[string]string{"app": "vllm", "role": "router"}, nil),
	} {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}

	cfg := fleet.DefaultConfig()
	cfg.ServiceDiscovery = true
	cfg.PrefillSelector = []string{"app=vllm", "role=prefill"}
	cfg.DecodeSelector = []string{"app=vllm", "role=decode"}
	cfg.ServiceDiscoveryNamespace = ns
	cfg.ServiceDiscoveryPort = port
	cfg.DrainSettle = 0
	g := fleet.StartGateway(t, cfg, fx.Supply(kube))
	assert.Empty(t, g.Workers(t), "no pod is running and ready yet")

	setStatus(t, cs, ns, "vllm-prefill-0", "127.0.1.1", corev1.ConditionTrue)
	setStatus(t, cs, ns, "vllm-decode-0", "127.0.1.2", corev1.ConditionTrue)
	setStatus(t, cs, ns, "vllm-router-0", "127.0.1.3", corev1.ConditionTrue)
	g.WaitWorkersHealthy(t, 2)
	ws := g.Workers(t)
	require.Len(t, ws, 2, "the router pod matches no selector")
	byType := map[string]fleet.WorkerInfo{}
	for _, w := range ws {
		byType[w.WorkerType] = w
	}
	assert.Equal(t, pre.URL(), byType["prefill"].URL)
	assert.Equal(t, dec.URL(), byType["decode"].URL)
	for _, w := range ws {
		assert.Equal(t, "NixlConnector", w.KVConnector, "from the smg.ai/kv-connector annotation")
		assert.Equal(t, "vllm", w.RuntimeType, "detected")
	}
	r := g.Post(t, "/v1/chat/completions", map[string]any{"model": "sim-model", "max_tokens": 3,
		"messages": []map[string]any{{"role": "user", "content": "discovered"}}}, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Eventually(t, func() bool { return dec.Stats().HandoffsReceived == 1 }, 5*time.Second, 10*time.Millisecond)
	assert.Zero(t, dec.Stats().RecomputedPrompts, "a real NIXL handoff")

	m := g.Metrics(t)
	assert.Equal(t, 2.0, m.Sum("smg_discovery_workers_discovered", "source", "kubernetes"))
	assert.Equal(t, 2.0, m.Sum("smg_discovery_registrations_total", "source", "kubernetes", "result", "success"))

	setStatus(t, cs, ns, "vllm-decode-0", "127.0.1.2", corev1.ConditionFalse)
	g.WaitUntil(t, "the not-ready decode leaves", func(ws []fleet.WorkerInfo) bool { return len(ws) == 1 && ws[0].WorkerType == "prefill" })
	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "vllm-prefill-0", metav1.DeleteOptions{}))
	g.WaitUntil(t, "the deleted prefill leaves", func(ws []fleet.WorkerInfo) bool { return len(ws) == 0 })
	assert.Equal(t, 2.0, g.Metrics(t).Sum("smg_discovery_deregistrations_total", "source", "kubernetes", "reason", "reconciled"))
}
