package registry

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/worker"
)

// childCounter stands in for the Service's root context and counts the contexts derived
// from it that are still attached: a derived context registers through AfterFunc (Value
// hides the cancelCtx underneath, so the context package takes that path) and detaches when
// its cancel is called.
type childCounter struct {
	context.Context
	mu       sync.Mutex
	attached int
}

func (c *childCounter) Value(any) any { return nil }

func (c *childCounter) AfterFunc(f func()) func() bool {
	stop := context.AfterFunc(c.Context, f)
	c.mu.Lock()
	c.attached++
	c.mu.Unlock()
	var once sync.Once
	return func() bool {
		once.Do(func() {
			c.mu.Lock()
			c.attached--
			c.mu.Unlock()
		})
		return stop()
	}
}

func (c *childCounter) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.attached
}

// Every registration's activation context is released once the activation ends, whether
// the worker became ready or was removed while pending, and the activation is forgotten.
func TestActivationContextsAreReleased(t *testing.T) {
	t.Parallel()
	healthy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	t.Cleanup(healthy.Close)
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(silent.Close)

	cfg := config.Default()
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthCheckTimeout = time.Second
	cfg.DrainSettle = 0
	store := memory.NewWorkers()
	s := New(store, cfg, nil, slog.New(slog.DiscardHandler))
	root := &childCounter{Context: s.ctx}
	s.ctx = root
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
	})

	const n = 20
	var ready, pending []string
	for i := range n {
		acc, err := s.Register(context.Background(), Spec{URL: fmt.Sprintf("%s/r%d", healthy.URL, i)})
		require.NoError(t, err)
		ready = append(ready, acc.WorkerID)
		acc, err = s.Register(context.Background(), Spec{URL: fmt.Sprintf("%s/p%d", silent.URL, i)})
		require.NoError(t, err)
		pending = append(pending, acc.WorkerID)
	}
	assert.Equal(t, 2*n, root.count(), "one context per activation in progress")
	require.Eventually(t, func() bool {
		for _, id := range ready {
			l, err := store.Get(id)
			if err != nil || l.Status() != worker.StatusReady {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond)
	for _, id := range pending {
		require.NoError(t, s.Remove(context.Background(), id))
	}
	require.Eventually(t, func() bool { return root.count() == 0 }, 5*time.Second, 5*time.Millisecond,
		"activation contexts still attached: %d", root.count())
	s.mu.Lock()
	assert.Empty(t, s.jobs)
	s.mu.Unlock()
}
