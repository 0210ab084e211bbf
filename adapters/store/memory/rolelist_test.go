package memory_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/worker"
)

// Snapshots taken between changes keep what they showed through every later Add, Replace
// and Remove, whether or not the store edits its lists in place.
func TestWorkersSnapshotsSurviveEveryChange(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	type taken struct {
		snap []*worker.Live
		want []*worker.Live // the same workers, by identity
	}
	var all []taken
	take := func() {
		snap := s.ByRole(worker.RolePrefill)
		all = append(all, taken{snap, slices.Clone(snap)})
	}
	url := func(i int) string { return fmt.Sprintf("http://127.0.0.1:%d", 1000+i) }
	pending := map[int]*worker.Live{}
	for i := range 12 {
		pending[i] = live(fmt.Sprint(i), url(i), worker.RolePrefill)
		require.NoError(t, s.Add(pending[i]))
		if i%3 == 0 { // some changes happen with no reader in between
			take()
		}
	}
	for i := range 12 {
		nw := worker.NewLive(worker.Worker{ID: fmt.Sprint(i), URL: url(i), Role: worker.RolePrefill}, worker.StatusReady)
		require.NoError(t, s.Replace(pending[i], nw))
		if i%4 == 1 {
			take()
		}
	}
	for i := 0; i < 12; i += 2 {
		_, err := s.Remove(fmt.Sprint(i))
		require.NoError(t, err)
		if i%4 == 0 {
			take()
		}
	}
	require.NoError(t, s.Add(live("x", url(99), worker.RolePrefill)))
	take()

	for i, tk := range all {
		require.Len(t, tk.snap, len(tk.want), "snapshot %d", i)
		for j := range tk.want {
			assert.Same(t, tk.want[j], tk.snap[j], "snapshot %d, element %d", i, j)
		}
	}
	last := s.ByRole(worker.RolePrefill)
	assert.Equal(t, []string{"1", "3", "5", "7", "9", "11", "x"}, ids(last))
	for _, w := range last[:6] {
		assert.Equal(t, worker.StatusReady, w.Status(), "the replaced workers are listed")
	}

	// A caller's append does not write into the store's array.
	_ = append(last, live("y", url(100), worker.RolePrefill))
	require.NoError(t, s.Add(live("z", url(101), worker.RolePrefill)))
	assert.Equal(t, "z", s.ByRole(worker.RolePrefill)[7].ID)
}

// Readers iterating snapshots while a writer adds, replaces and removes (run with -race).
func TestWorkersSnapshotsUnderConcurrentChanges(t *testing.T) {
	t.Parallel()
	s := memory.NewWorkers()
	const n = 200
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				snap := s.ByRole(worker.RoleDecode)
				seen := map[string]bool{}
				for _, w := range snap {
					if seen[w.ID] {
						t.Errorf("worker %s twice in one snapshot", w.ID)
						return
					}
					seen[w.ID] = true
				}
			}
		}()
	}
	for i := range n {
		id, u := fmt.Sprint(i), fmt.Sprintf("http://127.0.0.1:%d", 1000+i)
		p := live(id, u, worker.RoleDecode)
		require.NoError(t, s.Add(p))
		require.NoError(t, s.Replace(p, worker.NewLive(worker.Worker{ID: id, URL: u, Role: worker.RoleDecode}, worker.StatusReady)))
		if i%2 == 0 {
			_, err := s.Remove(id)
			require.NoError(t, err)
		}
	}
	close(stop)
	wg.Wait()
	assert.Len(t, s.ByRole(worker.RoleDecode), n/2)
}
