package selection

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

func boardFleet(t *testing.T, pol string) (*Selector, *memory.Workers, []*worker.Live) {
	t.Helper()
	st := memory.NewWorkers()
	var ps []*worker.Live
	for i := range 3 {
		for _, role := range []worker.Role{worker.RolePrefill, worker.RoleDecode} {
			u := fmt.Sprintf("http://%s%d:8000", role, i)
			l := worker.NewLive(worker.Worker{ID: u, URL: u, Role: role, Runtime: worker.RuntimeVLLM,
				Mode: worker.ConnHTTP, KVConnector: "NixlConnector", Models: []string{"m"}}, worker.StatusReady)
			require.NoError(t, st.Add(l))
			if role == worker.RolePrefill {
				ps = append(ps, l)
			}
		}
	}
	pp, err := policy.New(pol, policy.LegPrefill, policy.DefaultOptions())
	require.NoError(t, err)
	pd, err := policy.New(pol, policy.LegDecode, policy.DefaultOptions())
	require.NoError(t, err)
	return New(st, pairing.ModeLenient, pp, pd, nil), st, ps
}

func selectOnce(t *testing.T, s *Selector) *view {
	t.Helper()
	_, _, release, err := s.Select(&policy.Request{Model: "m", Text: "hello"})
	require.NoError(t, err)
	release()
	return s.view(s.current(), "m")
}

// A view's load boards are built for a board-reading policy on first use and closed when the
// view is replaced (an availability change, a fleet change), so replaced boards stop
// following the workers' loads. Not parallel: other tests move the process-wide
// availability epoch, which would replace the views under test at any time.
func TestViewBoardsClosedWithTheirView(t *testing.T) {
	s, st, ps := boardFleet(t, "cache_aware")
	v1 := selectOnce(t, s)
	b1, d1 := v1.candBoard.Load(), v1.decodeBoards[0].Load()
	require.NotNil(t, b1)
	require.NotNil(t, d1)
	require.True(t, b1.For(v1.cands))
	_, _, ok := b1.Min()
	require.True(t, ok)

	st.SetStatus(ps[0], worker.StatusNotReady) // a new availability epoch
	v2 := selectOnce(t, s)
	require.NotSame(t, v1, v2)
	_, _, ok = b1.Min()
	require.False(t, ok, "the replaced view's prefill board is closed")
	_, _, ok = d1.Min()
	require.False(t, ok, "and its decode board")
	require.Nil(t, v1.board(s.prefillPolicy, &v1.prefillBoard, v1.prefills), "a closed view builds no board")

	b2 := v2.candBoard.Load()
	_, err := st.Remove(ps[1].ID) // a new snapshot
	require.NoError(t, err)
	v3 := selectOnce(t, s)
	require.NotSame(t, v2, v3)
	_, _, ok = b2.Min()
	require.False(t, ok, "a replaced snapshot's boards are closed")
	require.NotNil(t, v3.candBoard.Load())
}

// Policies that do not read boards cost no board.
func TestViewBoardsOnlyForBoardPolicies(t *testing.T) {
	s, _, _ := boardFleet(t, "round_robin")
	v := selectOnce(t, s)
	require.Nil(t, v.candBoard.Load())
	require.Nil(t, v.decodeBoards[0].Load())
}
