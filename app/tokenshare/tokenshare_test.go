package tokenshare_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/tokenshare"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

type list []*worker.Live

func (l list) List() []*worker.Live { return l }

// gateway is one instance's view of the same two workers.
func gateway() list {
	return list{
		worker.NewLive(worker.Worker{ID: "d1", URL: "http://127.0.0.1:31001", Role: worker.RoleDecode}, worker.StatusReady),
		worker.NewLive(worker.Worker{ID: "d2", URL: "http://127.0.0.1:31002", Role: worker.RoleDecode}, worker.StatusReady),
	}
}

func TestInstancesSeeEachOthersTokenLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	board := memory.NewTokenBoard(nil)
	ga, gb := gateway(), gateway()
	a := tokenshare.New(board, ga, tokenshare.Options{Instance: "a"})
	b := tokenshare.New(board, gb, tokenshare.Options{Instance: "b"})

	ga[0].HoldTokens(30000, 256) // instance a sends a long prompt to d1
	gb[1].HoldTokens(100, 16)    // instance b has a short one on d2
	require.NoError(t, a.Sync(ctx))
	require.NoError(t, b.Sync(ctx))
	require.NoError(t, a.Sync(ctx))
	assert.Equal(t, int64(30256), gb[0].RemoteTokens())
	assert.Equal(t, int64(30256), gb[0].TokenLoad())
	assert.Equal(t, int64(116), ga[1].RemoteTokens())
	assert.Zero(t, ga[0].RemoteTokens(), "an instance does not count its own load twice")

	o := policy.DefaultOptions()
	o.LoadMetric = policy.LoadTokens
	p, err := policy.New("power_of_two", policy.LegDecode, o)
	require.NoError(t, err)
	for range 20 {
		assert.Equal(t, 1, p.Select(gb, nil), "b avoids the worker a loaded")
	}

	ga[0].UnholdTokens(30000, 256)
	require.NoError(t, a.Sync(ctx))
	require.NoError(t, b.Sync(ctx))
	assert.Zero(t, gb[0].RemoteTokens(), "a released: b sees it at its next sync")
}

func TestAStaleShareIsDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	now := time.Unix(1000, 0)
	board := memory.NewTokenBoard(func() time.Time { return now })
	ga, gb := gateway(), gateway()
	a := tokenshare.New(board, ga, tokenshare.Options{Instance: "a", TTL: time.Second})
	b := tokenshare.New(board, gb, tokenshare.Options{Instance: "b"})
	ga[0].HoldTokens(500, 0)
	require.NoError(t, a.Sync(ctx))
	require.NoError(t, b.Sync(ctx))
	assert.Equal(t, int64(500), gb[0].RemoteTokens())
	now = now.Add(2 * time.Second) // a crashed: it stopped publishing
	require.NoError(t, b.Sync(ctx))
	assert.Zero(t, gb[0].RemoteTokens())

	failing := tokenshare.New(brokenBoard{}, gb, tokenshare.Options{Instance: "b"})
	gb[0].SetRemoteTokens(99)
	require.Error(t, failing.Sync(ctx))
	assert.Zero(t, gb[0].RemoteTokens(), "a board failure resets the shared part")
}

type brokenBoard struct{}

func (brokenBoard) Publish(context.Context, string, map[string]int64, time.Duration) error {
	return errors.New("down")
}

func (brokenBoard) Others(context.Context, string) (map[string]int64, error) {
	return nil, errors.New("down")
}
