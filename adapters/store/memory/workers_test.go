package memory_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func live(id, url string, r worker.Role) *worker.Live {
	return worker.NewLive(worker.Worker{ID: id, URL: url, Role: r}, worker.StatusPending)
}

func ids(ws []*worker.Live) []string {
	out := make([]string, 0, len(ws))
	for _, w := range ws {
		out = append(out, w.ID)
	}
	return out
}

func TestWorkersAddGetRemove(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	p1 := live("p1", "http://127.0.0.1:1", worker.RolePrefill)
	d1 := live("d1", "http://127.0.0.1:2", worker.RoleDecode)
	p2 := live("p2", "http://127.0.0.1:3", worker.RolePrefill)
	for _, w := range []*worker.Live{p1, d1, p2} {
		require.NoError(t, s.Add(w))
	}

	got, err := s.Get("d1")
	require.NoError(t, err)
	assert.Same(t, d1, got)
	got, err = s.GetByURL("http://127.0.0.1:3")
	require.NoError(t, err)
	assert.Same(t, p2, got)
	assert.Equal(t, []string{"p1", "d1", "p2"}, ids(s.List()))
	assert.Equal(t, []string{"p1", "p2"}, ids(s.ByRole(worker.RolePrefill)))
	assert.Equal(t, []string{"d1"}, ids(s.ByRole(worker.RoleDecode)))
	assert.Empty(t, s.ByRole(worker.RoleRegular))

	removed, err := s.Remove("p1")
	require.NoError(t, err)
	assert.Same(t, p1, removed)
	assert.Equal(t, []string{"d1", "p2"}, ids(s.List()))
	assert.Equal(t, []string{"p2"}, ids(s.ByRole(worker.RolePrefill)))
	_, err = s.GetByURL("http://127.0.0.1:1")
	assert.ErrorIs(t, err, ports.ErrNotFound)
	// The URL is free again.
	require.NoError(t, s.Add(live("p1b", "http://127.0.0.1:1", worker.RolePrefill)))
}

func TestWorkersErrors(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	require.NoError(t, s.Add(live("a", "http://127.0.0.1:1", worker.RoleDecode)))

	tests := []struct {
		name string
		do   func() error
		is   error
	}{
		{"duplicate url", func() error { return s.Add(live("b", "http://127.0.0.1:1", worker.RolePrefill)) }, ports.ErrDuplicateURL},
		{"remove unknown id", func() error { _, err := s.Remove("nope"); return err }, ports.ErrNotFound},
		{"get unknown id", func() error { _, err := s.Get("nope"); return err }, ports.ErrNotFound},
		{"get unknown url", func() error { _, err := s.GetByURL("http://127.0.0.1:9"); return err }, ports.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.ErrorIs(t, tc.do(), tc.is)
		})
	}
	assert.Error(t, s.Add(live("a", "http://127.0.0.1:2", worker.RoleDecode)), "duplicate id")
	assert.Error(t, s.Add(nil))
	assert.Error(t, s.Add(live("", "http://127.0.0.1:3", worker.RoleDecode)))
	assert.Len(t, s.List(), 1, "failed adds leave the store unchanged")
}

func TestWorkersListIsACopyAndByRoleASnapshot(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	require.NoError(t, s.Add(live("a", "http://127.0.0.1:1", worker.RolePrefill)))
	l := s.List()
	l[0] = nil
	assert.NotNil(t, s.List()[0])

	snap := s.ByRole(worker.RolePrefill)
	require.NoError(t, s.Add(live("b", "http://127.0.0.1:2", worker.RolePrefill)))
	assert.Equal(t, []string{"a"}, ids(snap), "an earlier snapshot does not change")
	assert.Equal(t, []string{"a", "b"}, ids(s.ByRole(worker.RolePrefill)))
}

func TestWorkersEvents(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	var got []string
	s.Subscribe(func(ev ports.WorkerEvent) {
		// Reading the store from a subscriber is allowed.
		_ = s.List()
		got = append(got, ev.Kind+":"+ev.Worker.ID+":"+string(ev.Worker.Status()))
	})
	a := live("a", "http://127.0.0.1:1", worker.RolePrefill)
	require.NoError(t, s.Add(a))
	s.SetStatus(a, worker.StatusReady)
	s.SetStatus(a, worker.StatusReady) // unchanged: no event
	_ = s.Add(live("x", "http://127.0.0.1:1", worker.RolePrefill))
	_, err := s.Remove("a")
	require.NoError(t, err)
	s.SetStatus(a, worker.StatusFailed) // no longer registered: status set, no event

	assert.Equal(t, []string{"added:a:pending", "status:a:ready", "removed:a:ready"}, got)
	assert.Equal(t, worker.StatusFailed, a.Status())
}

func TestWorkersConcurrentUse(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	var events sync.Map
	s.Subscribe(func(ev ports.WorkerEvent) { events.Store(ev.Kind+ev.Worker.ID, true) })

	const writers, perWriter = 8, 50
	var wg sync.WaitGroup
	for g := range writers {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := range perWriter {
				id := fmt.Sprintf("w%d-%d", g, i)
				role := worker.RolePrefill
				if i%2 == 1 {
					role = worker.RoleDecode
				}
				l := live(id, "http://127.0.0.1:1/"+id, role)
				if err := s.Add(l); err != nil {
					t.Errorf("add %s: %v", id, err)
					return
				}
				s.SetStatus(l, worker.StatusReady)
				if i%3 == 0 {
					if _, err := s.Remove(id); err != nil {
						t.Errorf("remove %s: %v", id, err)
					}
				}
			}
		}()
		go func() { // readers, as the dispatch path and the API would
			defer wg.Done()
			for range perWriter * 2 {
				for _, w := range s.ByRole(worker.RolePrefill) {
					_ = w.Available()
				}
				_ = s.List()
				_, _ = s.Get("w0-1")
			}
		}()
	}
	wg.Wait()

	want := 0
	for i := range perWriter {
		if i%3 != 0 {
			want++
		}
	}
	all := s.List()
	assert.Len(t, all, writers*want)
	assert.Equal(t, len(all), len(s.ByRole(worker.RolePrefill))+len(s.ByRole(worker.RoleDecode)))
	_, ok := events.Load("statusw7-49")
	assert.True(t, ok)
}

func TestModuleProvidesWorkerStore(t *testing.T) {
	t.Parallel()
	var store ports.WorkerStore
	app := fxtest.New(t, memory.Module(), fx.Populate(&store), fx.NopLogger)
	app.RequireStart().RequireStop()
	require.NotNil(t, store)
	assert.Empty(t, store.List())
}

func TestWorkersReplaceKeepsOrderAndNotifies(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	a := worker.NewLive(worker.Worker{ID: "a", URL: "http://a:1", Role: worker.RolePrefill}, worker.StatusPending)
	b := worker.NewLive(worker.Worker{ID: "b", URL: "http://b:1", Role: worker.RolePrefill}, worker.StatusReady)
	require.NoError(t, s.Add(a))
	require.NoError(t, s.Add(b))
	var kinds []string
	s.Subscribe(func(ev ports.WorkerEvent) { kinds = append(kinds, ev.Kind+":"+ev.Worker.ID) })

	a2 := worker.NewLive(worker.Worker{ID: "a", URL: "http://a:1", Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM}, worker.StatusReady)
	require.NoError(t, s.Replace(a, a2))
	assert.Equal(t, []*worker.Live{a2, b}, s.List(), "a keeps its place")
	assert.Equal(t, []*worker.Live{a2, b}, s.ByRole(worker.RolePrefill))
	got, err := s.GetByURL("http://a:1")
	require.NoError(t, err)
	assert.Same(t, a2, got)
	assert.Equal(t, []string{"removed:a", "added:a"}, kinds)

	assert.ErrorIs(t, s.Replace(a, a2), ports.ErrNotFound, "a is no longer the registered worker")
	other := worker.NewLive(worker.Worker{ID: "x", URL: "http://a:1"}, worker.StatusReady)
	assert.Error(t, s.Replace(a2, other), "a different id is refused")
}
