package registry_test

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// flakyFleet wraps a fleet: down makes every call fail (Redis unreachable); quiet drops the
// change notices (a lost Pub/Sub message), so only polling sees changes.
type flakyFleet struct {
	ports.FleetStore
	down, quiet atomic.Bool
}

var errDown = errors.New("fleet unreachable")

func (f *flakyFleet) Put(ctx context.Context, r ports.FleetRecord) (string, error) {
	if f.down.Load() {
		return "", errDown
	}
	return f.FleetStore.Put(ctx, r)
}

func (f *flakyFleet) Delete(ctx context.Context, id string) error {
	if f.down.Load() {
		return errDown
	}
	return f.FleetStore.Delete(ctx, id)
}

func (f *flakyFleet) List(ctx context.Context) (int64, []ports.FleetRecord, error) {
	if f.down.Load() {
		return 0, nil, errDown
	}
	return f.FleetStore.List(ctx)
}

func (f *flakyFleet) Version(ctx context.Context) (int64, error) {
	if f.down.Load() {
		return 0, errDown
	}
	return f.FleetStore.Version(ctx)
}

func (f *flakyFleet) Watch() (<-chan struct{}, func()) {
	if f.quiet.Load() {
		return make(chan struct{}), func() {}
	}
	return f.FleetStore.Watch()
}

// replica starts a registry on its own store sharing fleet f, as a gateway replica does.
func replica(t *testing.T, f ports.FleetStore, cfg config.Config) (*registry.Service, *memory.Workers) {
	t.Helper()
	store := memory.NewWorkers()
	s := registry.New(store, cfg, nil, slog.New(slog.DiscardHandler)).
		WithFleet(f, registry.FleetOptions{Poll: 20 * time.Millisecond, Resync: time.Hour})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
	})
	require.NoError(t, s.RegisterStartup(context.Background()))
	return s, store
}

func vllmSpec(url string) registry.Spec {
	return registry.Spec{URL: url, WorkerType: "prefill", KVConnector: "NixlConnector",
		Labels: map[string]string{"zone": "a", "kv_role": "kv_producer"}}
}

// hasWorker waits until store holds the worker id (any status).
func hasWorker(t *testing.T, store *memory.Workers, id string) *worker.Live {
	t.Helper()
	var l *worker.Live
	require.Eventually(t, func() bool {
		var err error
		l, err = store.Get(id)
		return err == nil
	}, waitFor, tick, "worker %s registered", id)
	return l
}

func gone(t *testing.T, store *memory.Workers, id string) {
	t.Helper()
	require.Eventually(t, func() bool { _, err := store.Get(id); return err != nil }, waitFor, tick, "worker %s removed", id)
}

func TestFleetRegistrationReachesEveryReplicaAndDeleteThroughAnotherRemovesIt(t *testing.T) {
	t.Parallel()
	for _, quiet := range []bool{false, true} {
		name := map[bool]string{false: "change notices", true: "notices lost: polling"}[quiet]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			f := &flakyFleet{FleetStore: memory.NewFleet()}
			f.quiet.Store(quiet)
			srv := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
			a, sa := replica(t, f, testConfig())
			b, sb := replica(t, f, testConfig())
			_, sc := replica(t, f, testConfig())

			acc, err := a.Register(context.Background(), vllmSpec(srv.URL))
			require.NoError(t, err)
			for _, st := range []*memory.Workers{sa, sb, sc} {
				l := hasWorker(t, st, acc.WorkerID)
				assert.Equal(t, srv.URL, l.URL)
				assert.Equal(t, worker.RolePrefill, l.Role)
				assert.Equal(t, "NixlConnector", l.KVConnector, "the whole registration body is shared")
				assert.Equal(t, "kv_producer", l.KVRole)
				assert.Equal(t, "a", l.Labels["zone"])
				// Every replica activates (probes and detects) the worker itself.
				require.Eventually(t, func() bool {
					l, err := st.Get(acc.WorkerID)
					return err == nil && l.Healthy() && l.Runtime == worker.RuntimeVLLM
				}, waitFor, tick)
			}
			_, err = b.Register(context.Background(), vllmSpec(srv.URL))
			ee, ok := errs.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, 409, ee.Status)
			assert.Contains(t, ee.Message, acc.WorkerID, "the fleet's id")

			require.NoError(t, b.Remove(context.Background(), acc.WorkerID))
			for _, st := range []*memory.Workers{sa, sb, sc} {
				gone(t, st, acc.WorkerID)
			}
			_, recs, err := f.List(context.Background())
			require.NoError(t, err)
			assert.Empty(t, recs)
		})
	}
}

func TestFleetDeleteDrainsOnEveryReplica(t *testing.T) {
	t.Parallel()
	f := memory.NewFleet()
	cfg := testConfig()
	cfg.DrainSettle = 400 * time.Millisecond
	srv := (&engine{ownedBy: "sglang", model: "m", serverInfo: true}).start(t)
	a, sa := replica(t, f, cfg)
	_, sb := replica(t, f, cfg)
	l := readyWorker(t, a, registry.Spec{URL: srv.URL, WorkerType: "decode"})
	require.Eventually(t, func() bool { w, err := sb.Get(l.ID); return err == nil && w.Healthy() }, waitFor, tick)

	require.NoError(t, a.Remove(context.Background(), l.ID))
	for _, st := range []*memory.Workers{sa, sb} {
		require.Eventually(t, func() bool {
			w, err := st.Get(l.ID)
			return err == nil && w.Status() == worker.StatusDraining
		}, waitFor, tick, "draining before removal")
	}
	gone(t, sa, l.ID)
	gone(t, sb, l.ID)
}

func TestFleetLateReplicaStartsWithTheWholeFleet(t *testing.T) {
	t.Parallel()
	f := memory.NewFleet()
	srv1 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	srv2 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	a, _ := replica(t, f, testConfig())
	acc1, err := a.Register(context.Background(), vllmSpec(srv1.URL))
	require.NoError(t, err)
	acc2, err := a.Register(context.Background(), registry.Spec{URL: srv2.URL, WorkerType: "decode", KVConnector: "NixlConnector"})
	require.NoError(t, err)

	_, sd := replica(t, f, testConfig()) // RegisterStartup returned: nothing to wait for
	ws := sd.List()
	require.Len(t, ws, 2)
	assert.Equal(t, acc1.WorkerID, ws[0].ID, "registration order kept")
	assert.Equal(t, acc2.WorkerID, ws[1].ID)
}

func TestFleetStartupWorkersAreRegisteredOnce(t *testing.T) {
	t.Parallel()
	f := memory.NewFleet()
	srv := (&engine{ownedBy: "sglang", model: "m", serverInfo: true}).start(t)
	cfg := testConfig()
	cfg.Decode = []string{srv.URL}
	_, sa := replica(t, f, cfg)
	_, sb := replica(t, f, cfg)
	_, recs, err := f.List(context.Background())
	require.NoError(t, err)
	require.Len(t, recs, 1)
	require.Len(t, sa.List(), 1)
	require.Len(t, sb.List(), 1)
	assert.Equal(t, recs[0].ID, sa.List()[0].ID)
	assert.Equal(t, recs[0].ID, sb.List()[0].ID, "the second replica takes the fleet's registration")
}

func TestFleetOutageKeepsTheLastKnownWorkersAndReconcilesAfter(t *testing.T) {
	t.Parallel()
	shared := memory.NewFleet()
	fa := &flakyFleet{FleetStore: shared}
	srv1 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	srv2 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	a, sa := replica(t, fa, testConfig())
	b, sb := replica(t, shared, testConfig())
	acc1, err := b.Register(context.Background(), vllmSpec(srv1.URL))
	require.NoError(t, err)
	hasWorker(t, sa, acc1.WorkerID)

	fa.down.Store(true) // A loses the fleet
	require.NoError(t, b.Remove(context.Background(), acc1.WorkerID))
	gone(t, sb, acc1.WorkerID)
	acc2, err := a.Register(context.Background(), registry.Spec{URL: srv2.URL, WorkerType: "decode"})
	require.NoError(t, err, "a registration while the fleet is unreachable applies locally")
	time.Sleep(200 * time.Millisecond) // ten polls: A must not forget what it knows
	_, err = sa.Get(acc1.WorkerID)
	assert.NoError(t, err, "A keeps its last known fleet while it cannot read it")
	hasWorker(t, sa, acc2.WorkerID)
	_, err = sb.Get(acc2.WorkerID)
	assert.Error(t, err, "B cannot know A's registration yet")

	fa.down.Store(false)
	gone(t, sa, acc1.WorkerID)      // the removal made meanwhile reaches A
	hasWorker(t, sb, acc2.WorkerID) // and A's registration reaches B
	_, err = sa.Get(acc2.WorkerID)
	assert.NoError(t, err)
}

// swapFleet forwards to the fleet stored in cur, so a test can replace it by an empty one
// (a Redis restarted without persistence).
type swapFleet struct{ cur atomic.Pointer[memory.Fleet] }

func (f *swapFleet) Put(ctx context.Context, r ports.FleetRecord) (string, error) {
	return f.cur.Load().Put(ctx, r)
}
func (f *swapFleet) Delete(ctx context.Context, id string) error { return f.cur.Load().Delete(ctx, id) }
func (f *swapFleet) List(ctx context.Context) (int64, []ports.FleetRecord, error) {
	return f.cur.Load().List(ctx)
}
func (f *swapFleet) Version(ctx context.Context) (int64, error) { return f.cur.Load().Version(ctx) }
func (f *swapFleet) Watch() (<-chan struct{}, func())           { return make(chan struct{}), func() {} }

func TestFleetThatLostItsRecordsIsWrittenBackNotDrained(t *testing.T) {
	t.Parallel()
	f := &swapFleet{}
	f.cur.Store(memory.NewFleet())
	srv1 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	srv2 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	a, sa := replica(t, f, testConfig())
	b, sb := replica(t, f, testConfig())
	acc1, err := a.Register(context.Background(), vllmSpec(srv1.URL))
	require.NoError(t, err)
	acc2, err := b.Register(context.Background(), registry.Spec{URL: srv2.URL, WorkerType: "decode"})
	require.NoError(t, err)
	hasWorker(t, sa, acc2.WorkerID)
	hasWorker(t, sb, acc1.WorkerID)

	f.cur.Store(memory.NewFleet()) // the store comes back empty
	require.Eventually(t, func() bool {
		_, recs, _ := f.List(context.Background())
		return len(recs) == 2
	}, waitFor, tick, "the replicas write the fleet back")
	_, recs, err := f.List(context.Background())
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{acc1.WorkerID, acc2.WorkerID}, []string{recs[0].ID, recs[1].ID}, "with their ids")
	time.Sleep(100 * time.Millisecond) // five polls
	for _, st := range []*memory.Workers{sa, sb} {
		require.Len(t, st.List(), 2, "nothing was drained")
		for _, l := range st.List() {
			assert.NotEqual(t, worker.StatusDraining, l.Status())
		}
	}
}

// registryRecord is a fleet record for a worker at url, as another replica writes it.
func registryRecord(t *testing.T, url string) ports.FleetRecord {
	t.Helper()
	return ports.FleetRecord{ID: "4f9c1f52-8d37-4e1b-9b7a-0a6a7f6c0b11", URL: url,
		Spec: []byte(`{"url":"` + url + `","worker_type":"decode","health":{"disable_health_check":true}}`)}
}
