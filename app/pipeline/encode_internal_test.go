package pipeline

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// recEncoder records the Encode RPCs it is asked for.
type recEncoder struct {
	mu   sync.Mutex
	got  []recJob
	done chan struct{}
}

type recJob struct {
	url, id string
	mm      *ports.GRPCMultimodal
	room    int64
}

func (r *recEncoder) Encode(_ context.Context, w worker.Worker, id string, mm *ports.GRPCMultimodal, room int64) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, recJob{w.URL, id, mm, room})
	r.done <- struct{}{}
	return true, nil
}

func encodeStore(t *testing.T, urls ...string) *memory.Workers {
	t.Helper()
	store := memory.NewWorkers()
	for i, u := range urls {
		bp := 8990 + i
		w := worker.Worker{ID: u, URL: u, Role: worker.RoleEncode, Runtime: worker.RuntimeTokenSpeed, Mode: worker.ConnGRPC}
		if i > 0 {
			w.BootstrapPort = &bp // the first one registered without a port: 8998
		}
		require.NoError(t, store.Add(worker.NewLive(w, worker.StatusReady)))
	}
	return store
}

func mmUnit(p, d *worker.Live, hashes ...string) (*job, []unit) {
	j := testJob(handoff.RouteChat, 1, nil, "x")
	j.name = "m"
	j.mm = &mmJob{}
	full := &ports.GRPCMultimodal{PlaceholderTokenID: 151655}
	for _, h := range hashes {
		full.Items = append(full.Items, ports.GRPCMediaItem{Modality: "image", Hash: h, Pixels: []byte(h), PixelShape: [2]uint32{1, 4}})
	}
	u := unit{pLeg: ports.GRPCLeg{Worker: p, MM: full}, dLeg: ports.GRPCLeg{Worker: d, MM: pixelFree(full)}}
	return j, []unit{u}
}

func TestPlanEncodeOneWorkerAndRoomPerItem(t *testing.T) {
	cfg := config.Default()
	cfg.EPDDisaggregation = true
	store := encodeStore(t, "grpc://10.0.0.1:50060", "grpc://10.0.0.2:50060")
	picker, err := NewStoreEncodePicker(store, "round_robin", policy.DefaultOptions())
	require.NoError(t, err)
	rec := &recEncoder{done: make(chan struct{}, 8)}
	pl := New(Deps{Config: cfg, Encoder: rec, Encoders: picker})
	p, d := live(worker.RuntimeTokenSpeed, worker.RolePrefill, nil), live(worker.RuntimeTokenSpeed, worker.RoleDecode, nil)
	j, units := mmUnit(p, d, "aa", "bb")

	jobs, err := pl.planEncode(j, parallelTokenSpeed, units)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	ei := units[0].pLeg.EncodeItems
	require.Len(t, ei, 2)
	assert.Equal(t, []uint32{0, 1}, []uint32{ei[0].ItemIndex, ei[1].ItemIndex})
	assert.NotEqual(t, ei[0].Host, ei[1].Host, "round_robin: two encode workers")
	assert.ElementsMatch(t, []int{8998, 8991}, []int{ei[0].Port, ei[1].Port}, "the encode worker's port, 8998 when none")
	assert.NotEqual(t, ei[0].Room, ei[1].Room)
	for _, e := range ei {
		assert.GreaterOrEqual(t, e.Room, int64(0))
	}
	assert.NotNil(t, units[0].pLeg.MM.Items[0].Pixels, "pixels stay until the jobs are sent")

	pl.sendEncodes(context.Background(), jobs, units)
	<-rec.done
	<-rec.done
	require.NoError(t, pl.Close(context.Background()))
	assert.Nil(t, units[0].pLeg.MM.Items[0].Pixels, "the prefill loses its pixels")
	assert.Nil(t, units[0].pLeg.MM.Items[1].Pixels)
	assert.Equal(t, "aa", units[0].pLeg.MM.Items[0].Hash, "the item metadata stays")
	rec.mu.Lock()
	defer rec.mu.Unlock()
	byRoom := map[int64]recJob{}
	for _, g := range rec.got {
		byRoom[g.room] = g
		require.Len(t, g.mm.Items, 1, "one item per EncodeRequest")
		assert.NotNil(t, g.mm.Items[0].Pixels, "the encode job carries the pixels")
		assert.Regexp(t, `^encode-[0-9a-f-]{36}$`, g.id)
	}
	assert.Equal(t, "aa", byRoom[ei[0].Room].mm.Items[0].Hash, "item 0's job under item 0's room")
	assert.Equal(t, "bb", byRoom[ei[1].Room].mm.Items[0].Hash)
	for _, l := range store.List() {
		assert.Zero(t, l.Load(), "in-flight slots released after the RPCs")
	}
}

func TestPlanEncodeSkipsAndRefusals(t *testing.T) {
	cfg := config.Default()
	cfg.EPDDisaggregation = true
	p, d := live(worker.RuntimeTokenSpeed, worker.RolePrefill, nil), live(worker.RuntimeTokenSpeed, worker.RoleDecode, nil)

	empty, err := NewStoreEncodePicker(memory.NewWorkers(), "consistent_hashing", policy.DefaultOptions())
	require.NoError(t, err)
	pl := New(Deps{Config: cfg, Encoder: &recEncoder{}, Encoders: empty})
	text := testJob(handoff.RouteChat, 1, nil, "x")
	jobs, err := pl.planEncode(text, parallelTokenSpeed, []unit{{pLeg: ports.GRPCLeg{Worker: p}}})
	require.NoError(t, err)
	assert.Empty(t, jobs, "text only: no encode leg")

	j, units := mmUnit(p, d, "aa")
	_, err = pl.planEncode(j, parallelTokenSpeed, units)
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusServiceUnavailable, e.Status)
	assert.Equal(t, "encode", e.Leg)

	_, err = pl.planEncode(j, parallelSGLang, units)
	e, _ = errs.As(err)
	assert.Equal(t, http.StatusNotImplemented, e.Status, "only TokenSpeed prefills")

	j.mm.workerSide = true
	_, err = pl.planEncode(j, parallelTokenSpeed, units)
	e, _ = errs.As(err)
	assert.Equal(t, "multimodal_not_supported", e.Code)

	pd := New(Deps{Config: config.Default()})
	j, units = mmUnit(p, d, "aa")
	jobs, err = pd.planEncode(j, parallelTokenSpeed, units)
	require.NoError(t, err)
	assert.Empty(t, jobs, "PD mode: no encode leg")
	assert.NotNil(t, units[0].pLeg.MM.Items[0].Pixels)
}

func TestConsistentHashingPicksOneEncodeWorkerPerHash(t *testing.T) {
	store := encodeStore(t, "grpc://10.0.0.1:1", "grpc://10.0.0.2:1", "grpc://10.0.0.3:1", "grpc://10.0.0.4:1")
	picker, err := NewStoreEncodePicker(store, "consistent_hashing", policy.DefaultOptions())
	require.NoError(t, err)
	seen := map[string]bool{}
	for i := range 32 {
		h := string(rune('a'+i%8)) + "hash"
		first, rel, err := picker.PickEncode("", h)
		require.NoError(t, err)
		rel()
		again, rel, err := picker.PickEncode("", h)
		require.NoError(t, err)
		rel()
		assert.Equal(t, first.URL, again.URL, h)
		seen[first.URL] = true
	}
	assert.Greater(t, len(seen), 1, "different images spread over the encode workers")
	_, err = NewStoreEncodePicker(store, "cache_aware", policy.DefaultOptions())
	assert.Error(t, err, "the encode leg takes random, round_robin or consistent_hashing")
}
