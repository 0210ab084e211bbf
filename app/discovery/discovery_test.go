package discovery_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/discovery/kubernetes"
	"github.com/smg-go/smg/app/discovery"
	"github.com/smg-go/smg/domain/worker"
)

func TestSpecsAreRegistrationBodies(t *testing.T) {
	t.Parallel()
	bp := 8998
	specs := discovery.Specs([]kubernetes.Target{
		{Namespace: "inference", PodName: "prefill-0", PodUID: "u-p", URL: "http://10.1.0.5:8000", Role: kubernetes.RolePrefill,
			BootstrapPort: &bp, KVConnector: "MooncakeConnector", KVEngineID: "e-p"},
		{Namespace: "inference", PodName: "decode-0", PodUID: "u-d", URL: "http://10.1.0.6:8000", Role: kubernetes.RoleDecode, KVConnector: "NixlConnector"},
	})
	require.Len(t, specs, 2)
	w, err := specs[0].Build()
	require.NoError(t, err)
	assert.Equal(t, worker.RolePrefill, w.Role)
	require.NotNil(t, w.BootstrapPort)
	assert.Equal(t, 8998, *w.BootstrapPort)
	assert.Equal(t, "MooncakeConnector", w.KVConnector)
	assert.Equal(t, "e-p", w.KVEngineID)
	assert.Equal(t, map[string]string{"smg.ai/pod-name": "prefill-0", "smg.ai/pod-uid": "u-p", "smg.ai/namespace": "inference"}, w.Labels)
	w, err = specs[1].Build()
	require.NoError(t, err)
	assert.Equal(t, worker.RoleDecode, w.Role)
	assert.Nil(t, w.BootstrapPort)
	assert.Equal(t, "NixlConnector", w.KVConnector)
}
