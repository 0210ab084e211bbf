package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/ports"
)

// RunFleetStore runs the FleetStore contract. mk returns two handles on one new, empty fleet
// (for a shared adapter: two instances on the same namespace, e.g. two Redis clients and one
// key prefix), so the suite checks that what one writes the other reads and is told about.
// Subtests run in parallel.
func RunFleetStore(t *testing.T, mk func(t *testing.T) (a, b ports.FleetStore)) {
	rec := func(url string) ports.FleetRecord {
		return ports.FleetRecord{ID: uuid.NewString(), URL: url,
			Spec: []byte("{\"url\": \"" + url + "\",\n \"labels\": {\"k\": \"a\\nb\"}}")}
	}
	t.Run("put then list on the other handle", func(t *testing.T) {
		t.Parallel()
		a, b := mk(t)
		ctx := guard(t)
		v0, err := b.Version(ctx)
		require.NoError(t, err)
		r1, r2 := rec(Key("http://10.0.0.1:8000")), rec(Key("http://10.0.0.2:8000"))
		for _, r := range []ports.FleetRecord{r1, r2} {
			id, err := a.Put(ctx, r)
			require.NoError(t, err)
			assert.Equal(t, r.ID, id)
		}
		v, recs, err := b.List(ctx)
		require.NoError(t, err)
		assert.Greater(t, v, v0, "puts bump the version")
		require.Len(t, recs, 2)
		for i, r := range []ports.FleetRecord{r1, r2} {
			assert.Equal(t, r.ID, recs[i].ID, "registration order")
			assert.Equal(t, r.URL, recs[i].URL)
			assert.Equal(t, string(r.Spec), string(recs[i].Spec), "spec bytes kept, new lines and all")
		}
		assert.Less(t, recs[0].Seq, recs[1].Seq)
		vb, err := b.Version(ctx)
		require.NoError(t, err)
		assert.Equal(t, v, vb)
	})
	t.Run("a url is registered once", func(t *testing.T) {
		t.Parallel()
		a, b := mk(t)
		ctx := guard(t)
		r := rec(Key("http://10.0.0.3:8000"))
		_, err := a.Put(ctx, r)
		require.NoError(t, err)
		v, _ := a.Version(ctx)

		id, err := a.Put(ctx, r)
		require.NoError(t, err, "a retried put of the same record is not an error")
		assert.Equal(t, r.ID, id)
		other := rec(r.URL)
		id, err = b.Put(ctx, other)
		require.ErrorIs(t, err, ports.ErrDuplicateURL)
		assert.Equal(t, r.ID, id, "the registered record's id")
		taken := r
		taken.URL = Key("http://10.0.0.4:8000")
		_, err = b.Put(ctx, taken)
		require.Error(t, err, "an id registered for another url")
		assert.False(t, errors.Is(err, ports.ErrDuplicateURL))
		v2, _ := a.Version(ctx)
		assert.Equal(t, v, v2, "refused and repeated puts change nothing")
		_, recs, err := b.List(ctx)
		require.NoError(t, err)
		require.Len(t, recs, 1)
		assert.Equal(t, r.ID, recs[0].ID)
	})
	t.Run("delete", func(t *testing.T) {
		t.Parallel()
		a, b := mk(t)
		ctx := guard(t)
		r1, r2 := rec(Key("http://10.0.0.5:8000")), rec(Key("http://10.0.0.6:8000"))
		for _, r := range []ports.FleetRecord{r1, r2} {
			_, err := a.Put(ctx, r)
			require.NoError(t, err)
		}
		v, _ := a.Version(ctx)
		require.NoError(t, b.Delete(ctx, r1.ID))
		v2, recs, err := a.List(ctx)
		require.NoError(t, err)
		assert.Greater(t, v2, v)
		require.Len(t, recs, 1)
		assert.Equal(t, r2.ID, recs[0].ID)
		require.NoError(t, b.Delete(ctx, r1.ID), "deleting an unknown id is not an error")
		v3, _ := a.Version(ctx)
		assert.Equal(t, v2, v3, "a no-op delete keeps the version")
		again := rec(r1.URL)
		_, err = a.Put(ctx, again)
		require.NoError(t, err, "a deleted url can be registered again")
	})
	t.Run("watchers are told about changes", func(t *testing.T) {
		t.Parallel()
		a, b := mk(t)
		ctx := guard(t)
		notices, stop := b.Watch()
		defer stop()
		// The subscription may take a moment to be confirmed: put until a notice arrives.
		r := rec(Key("http://10.0.0.7:8000"))
		seen := false
		for i := 0; i < 100 && !seen; i++ {
			r.ID, r.URL = uuid.NewString(), Key("http://10.0.0.7:8000")
			_, err := a.Put(ctx, r)
			require.NoError(t, err)
			select {
			case <-notices:
				seen = true
			case <-time.After(100 * time.Millisecond):
			}
		}
		require.True(t, seen, "a put through one handle notifies the other's watcher")
		drain(notices)
		require.NoError(t, a.Delete(ctx, r.ID))
		select {
		case <-notices:
		case <-ctx.Done():
			t.Fatal("no notice for a delete")
		}
	})
}

func drain(ch <-chan struct{}) {
	for {
		select {
		case <-ch:
		case <-time.After(50 * time.Millisecond):
			return
		}
	}
}
