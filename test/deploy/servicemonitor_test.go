package deploy_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
)

// The ServiceMonitor (serviceMonitor.enabled) selects the gateway Service, whose metrics
// port it scrapes, and not the admin Service: both select the same pods, and the admin one
// publishes not-ready addresses, so matching it would list every replica twice.
func TestServiceMonitorSelectsOnlyTheGatewayService(t *testing.T) {
	bin := helm(t)
	objs := renderChart(t, bin, "serviceMonitor:\n  enabled: true\n")
	mon, ok := objs["ServiceMonitor/smg"]
	require.True(t, ok, "the chart renders no ServiceMonitor/smg")
	raw, found, err := unstructured.NestedMap(mon.Object, "spec", "selector")
	require.NoError(t, err)
	require.True(t, found, "the ServiceMonitor has no spec.selector")
	var ls metav1.LabelSelector
	require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(raw, &ls))
	sel, err := metav1.LabelSelectorAsSelector(&ls)
	require.NoError(t, err)

	gw := typed[corev1.Service](t, objs, "Service/smg")
	admin := typed[corev1.Service](t, objs, "Service/smg-admin")
	assert.True(t, sel.Matches(labels.Set(gw.Labels)), "the gateway Service %v is not selected by %s", gw.Labels, sel)
	assert.False(t, sel.Matches(labels.Set(admin.Labels)), "the admin Service %v is selected by %s", admin.Labels, sel)
	hasMetrics := false
	for _, p := range gw.Spec.Ports {
		hasMetrics = hasMetrics || p.Name == "metrics"
	}
	assert.True(t, hasMetrics, "the gateway Service has no port named metrics for the ServiceMonitor endpoint")
}
