package registry_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/registry"
)

// Discovered workers are the replica's own: not written to the shared fleet, not removed by
// its reconcile; a URL registered by hand is left alone; a gone entry is removed.
func TestSyncDiscoveredKeepsItsOwnSet(t *testing.T) {
	t.Parallel()
	f := memory.NewFleet()
	e1 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	e2 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	s, store := replica(t, f, testConfig())
	manual, err := s.Register(context.Background(), registry.Spec{URL: e2.URL, WorkerType: "decode"})
	require.NoError(t, err)

	res, err := s.SyncDiscovered(context.Background(), []registry.Spec{
		{URL: e1.URL, WorkerType: "prefill", KVConnector: "NixlConnector", Labels: map[string]string{"smg.ai/pod-uid": "u1"}},
		{URL: e2.URL, WorkerType: "decode"},
	})
	require.NoError(t, err)
	assert.Equal(t, registry.DeclaredResult{Registered: 1}, res, "the URL registered by hand is skipped")
	l, err := store.GetByURL(e1.URL)
	require.NoError(t, err)
	assert.Equal(t, "NixlConnector", l.KVConnector)
	_, recs, err := f.List(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1, "only the manual registration is in the fleet")
	assert.Equal(t, manual.WorkerID, recs[0].ID)
	require.Eventually(t, func() bool { w, err := store.GetByURL(e1.URL); return err == nil && w.Healthy() }, waitFor, tick, "activated")
	// A fleet change triggers a reconcile: the discovered worker stays.
	_, err = f.Put(context.Background(), registryRecord(t, "http://127.0.0.1:1"))
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(store.List()) == 3 }, waitFor, tick)
	_, err = store.GetByURL(e1.URL)
	require.NoError(t, err, "a reconcile does not remove discovered workers")

	res, err = s.SyncDiscovered(context.Background(), nil)
	require.NoError(t, err)
	assert.Equal(t, registry.DeclaredResult{Removed: 1}, res)
	_, err = store.GetByURL(e1.URL)
	assert.Error(t, err, "gone from the desired set: removed")
	_, err = store.Get(manual.WorkerID)
	assert.NoError(t, err, "a worker added by hand is never touched")
}
