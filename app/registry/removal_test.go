package registry_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/ports"
)

// TestListWaitsForRemovalSubscribers: the store drops a removed worker from its listing before
// its subscribers run; the registry's List and Get must not report the worker gone until
// every subscriber (breakers, metrics) has applied the removal.
func TestListWaitsForRemovalSubscribers(t *testing.T) {
	t.Parallel()
	s, store := newService(t, testConfig())
	l := readyWorker(t, s, registry.Spec{URL: (&engine{}).start(t).URL})
	entered, release := make(chan struct{}), make(chan struct{})
	var releaseOnce sync.Once
	unblock := func() { releaseOnce.Do(func() { close(release) }) }
	defer unblock() // a failing assertion must not leave Remove blocked in the subscriber
	var applied atomic.Bool
	store.Subscribe(func(ev ports.WorkerEvent) {
		if ev.Kind == ports.EventRemoved && ev.Worker.ID == l.ID {
			close(entered)
			<-release
			applied.Store(true)
		}
	})
	removed := make(chan error, 1)
	go func() { removed <- s.Remove(context.Background(), l.ID) }()
	<-entered

	listed := make(chan bool, 1)
	go func() {
		gone := true
		for _, x := range s.List() {
			if x.ID == l.ID {
				gone = false
			}
		}
		_, err := s.Get(l.ID)
		listed <- gone && err != nil && applied.Load()
	}()
	select {
	case ok := <-listed:
		unblock()
		<-removed
		require.Fail(t, "List answered while a removal subscriber was still running", "consistent=%v", ok)
	case <-time.After(200 * time.Millisecond):
	}
	unblock()
	require.NoError(t, <-removed)
	assert.True(t, <-listed, "after the removal applied, List and Get no longer find the worker")
}
