package kubernetes_test

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8s "k8s.io/client-go/kubernetes"

	"github.com/smg-go/smg/adapters/discovery/kubernetes"
	"github.com/smg-go/smg/adapters/discovery/kubernetes/k8stest"
)

func TestParseSelector(t *testing.T) {
	t.Parallel()
	s, err := kubernetes.ParseSelector([]string{"app=sglang", "role=prefill,tier=a"})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"app": "sglang", "role": "prefill", "tier": "a"}, s)
	s, err = kubernetes.ParseSelector(nil)
	require.NoError(t, err)
	assert.Nil(t, s)
	_, err = kubernetes.ParseSelector([]string{"app"})
	require.ErrorContains(t, err, `"app" is not key=value`)
}

func TestNewNeedsASelector(t *testing.T) {
	t.Parallel()
	_, err := kubernetes.New(kubernetes.Options{PD: true, Regular: map[string]string{"app": "x"}}, func([]kubernetes.Target) {})
	require.ErrorContains(t, err, "needs a selector")
}

// latest keeps the last desired set the watcher reported.
type latest struct {
	mu  sync.Mutex
	set []kubernetes.Target
	n   int
}

func (l *latest) put(ts []kubernetes.Target) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.set, l.n = ts, l.n+1
}

func (l *latest) get() []kubernetes.Target {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set
}

func pod(name string, lbl, ann map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbl, Annotations: ann},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "engine", Image: "engine:test"}}},
	}
}

func setStatus(t *testing.T, cs k8s.Interface, ns, name, ip string, readyStatus corev1.ConditionStatus) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: readyStatus}}
	_, err = cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
}

// Issue "Replicas that share one fleet", Done when (real API server): pods matching the
// prefill and decode selectors, with the bootstrap-port and kv-connector annotations, become
// targets with the right role, port, connector and engine id; a pod matching no selector is
// ignored; a pod marked not ready or deleted leaves the set.
func TestDiscoveryAgainstARealAPIServer(t *testing.T) {
	t.Parallel()
	cfg := k8stest.Start(t)
	cs, err := k8s.NewForConfig(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const ns = "inference"
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	// A matching pod in another namespace must not be seen.
	_, err = cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "elsewhere"}}, metav1.CreateOptions{})
	require.NoError(t, err)

	for _, p := range []*corev1.Pod{
		pod("prefill-0", map[string]string{"app": "sglang", "role": "prefill"},
			map[string]string{kubernetes.AnnotationBootstrapPort: "8998", kubernetes.AnnotationKVConnector: "MooncakeConnector", kubernetes.AnnotationKVEngineID: "engine-p0"}),
		pod("decode-0", map[string]string{"app": "sglang", "role": "decode"},
			map[string]string{kubernetes.AnnotationKVConnector: "NixlConnector", kubernetes.AnnotationKVEngineID: "engine-d0",
				kubernetes.AnnotationBootstrapPort: "9000"}), // decode pods never get one
		pod("router-0", map[string]string{"app": "sglang", "role": "router"}, nil), // no selector matches
		pod("other-0", map[string]string{"app": "other", "role": "decode"}, nil),   // filtered server-side
	} {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	_, err = cs.CoreV1().Pods("elsewhere").Create(ctx, pod("decode-x", map[string]string{"app": "sglang", "role": "decode"}, nil), metav1.CreateOptions{})
	require.NoError(t, err)

	var got latest
	w, err := kubernetes.New(kubernetes.Options{Config: cfg, Namespace: ns, Port: 8000, PD: true,
		Prefill: map[string]string{"app": "sglang", "role": "prefill"}, Decode: map[string]string{"app": "sglang", "role": "decode"},
		Resync: time.Hour, Coalesce: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}, got.put)
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(w.Stop)
	assert.Empty(t, got.get(), "pods without an IP, not running, not ready are not workers")

	setStatus(t, cs, ns, "prefill-0", "127.0.1.1", corev1.ConditionTrue)
	setStatus(t, cs, ns, "decode-0", "127.0.1.2", corev1.ConditionTrue)
	setStatus(t, cs, ns, "router-0", "127.0.1.3", corev1.ConditionTrue)
	setStatus(t, cs, ns, "other-0", "127.0.1.4", corev1.ConditionTrue)
	setStatus(t, cs, "elsewhere", "decode-x", "127.0.1.5", corev1.ConditionTrue)
	require.Eventually(t, func() bool { return len(got.get()) == 2 }, 20*time.Second, 10*time.Millisecond, "two targets: %+v", got.get())
	time.Sleep(100 * time.Millisecond) // every status update delivered
	ts := got.get()
	require.Len(t, ts, 2, "%+v", ts)
	p, d := ts[0], ts[1]
	assert.Equal(t, "http://127.0.1.1:8000", p.URL)
	assert.Equal(t, kubernetes.RolePrefill, p.Role)
	require.NotNil(t, p.BootstrapPort)
	assert.Equal(t, 8998, *p.BootstrapPort)
	assert.Equal(t, "MooncakeConnector", p.KVConnector)
	assert.Equal(t, "engine-p0", p.KVEngineID)
	assert.Equal(t, "prefill-0", p.PodName)
	assert.NotEmpty(t, p.PodUID)
	assert.Equal(t, "http://127.0.1.2:8000", d.URL)
	assert.Equal(t, kubernetes.RoleDecode, d.Role)
	assert.Nil(t, d.BootstrapPort, "decode pods never get a bootstrap port")
	assert.Equal(t, "NixlConnector", d.KVConnector)
	assert.Equal(t, "engine-d0", d.KVEngineID)

	// Not ready: out. Deleted: out.
	setStatus(t, cs, ns, "decode-0", "127.0.1.2", corev1.ConditionFalse)
	require.Eventually(t, func() bool { ts := got.get(); return len(ts) == 1 && ts[0].PodName == "prefill-0" },
		20*time.Second, 10*time.Millisecond, "decode-0 not ready leaves: %+v", got.get())
	require.NoError(t, cs.CoreV1().Pods(ns).Delete(ctx, "prefill-0", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return len(got.get()) == 0 }, 20*time.Second, 10*time.Millisecond, "deleted pod leaves: %+v", got.get())
}
