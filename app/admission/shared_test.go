package admission_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/store/redis"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/app/admission"
	"github.com/smg-go/smg/domain/errs"
)

func TestMain(m *testing.M) {
	redis.RouteLogs(quiet)
	code := m.Run()
	redistest.Stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

// Three gateway instances share one Redis: 3 x 24 concurrent dispatches on a decode
// window of 4. At no time are more than 4 admitted across the instances, and every dispatch
// is either admitted or shed with the seed's 503, the shed counter matching the sheds.
func TestThreeInstancesShareOneWindow(t *testing.T) {
	t.Parallel()
	const instances, perInstance, win = 3, 24, 4
	prefix := redistest.Prefix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var held, maxHeld, admitted, shed atomic.Int64
	metrics := make([]*pdMetrics, instances)
	var wg sync.WaitGroup
	for i := 0; i < instances; i++ {
		c, _ := redistest.Client(t)
		slots := redis.NewSlots(ctx, c, redis.Options{Prefix: prefix, Logger: quiet, OpTimeout: time.Second})
		t.Cleanup(func() { _ = slots.Close() })
		metrics[i] = &pdMetrics{}
		// A short budget so that some dispatches shed and some wait.
		a := admission.New(slots, admission.Options{Budget: 40 * time.Millisecond, Metrics: metrics[i], Logger: quiet})
		for g := 0; g < perInstance; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, err := a.Admit(ctx, window("4"), 1)
				if err != nil {
					e, ok := errs.As(err)
					if assert.True(t, ok, "unexpected error %v", err) {
						assert.Equal(t, 503, e.Status)
						assert.Equal(t, "worker_overload_protection_shed", e.Code)
					}
					shed.Add(1)
					return
				}
				h := held.Add(1)
				for m := maxHeld.Load(); h > m && !maxHeld.CompareAndSwap(m, h); m = maxHeld.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				held.Add(-1)
				release()
				admitted.Add(1)
			}()
		}
	}
	wg.Wait()
	assert.LessOrEqual(t, maxHeld.Load(), int64(win), "admitted beyond the shared window")
	assert.Equal(t, int64(instances*perInstance), admitted.Load()+shed.Load())
	var sheds int64
	for _, m := range metrics {
		sheds += m.sheds.Load()
	}
	assert.Equal(t, shed.Load(), sheds, "smg_pd_admission_sheds_total matches the sheds")
	require.NoError(t, ctx.Err())
}

// Three instances with flow-control queues share one Redis window of 4: two tenants' 3 x 24
// concurrent dispatches queue per instance, and at no time are more than 4 admitted across
// the instances; every dispatch is admitted (releases wake the queues) or shed with the 503.
func TestThreeInstancesQueueOnOneSharedWindow(t *testing.T) {
	t.Parallel()
	const instances, perInstance, win = 3, 24, 4
	prefix := redistest.Prefix()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	var held, maxHeld, admitted, shed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < instances; i++ {
		c, _ := redistest.Client(t)
		slots := redis.NewSlots(ctx, c, redis.Options{Prefix: prefix, Logger: quiet, OpTimeout: time.Second})
		t.Cleanup(func() { _ = slots.Close() })
		a := admission.New(slots, admission.Options{QueueSize: 64, QueueWait: 10 * time.Second, Logger: quiet})
		live := window("4")
		for g := 0; g < perInstance; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tctx := as(ctx, "batch", 0)
				if g%3 == 0 {
					tctx = as(ctx, "chat", 10)
				}
				release, err := a.Admit(tctx, live, 1)
				if err != nil {
					shedOf(t, err)
					shed.Add(1)
					return
				}
				h := held.Add(1)
				for m := maxHeld.Load(); h > m && !maxHeld.CompareAndSwap(m, h); m = maxHeld.Load() {
				}
				time.Sleep(5 * time.Millisecond)
				held.Add(-1)
				release()
				admitted.Add(1)
			}()
		}
	}
	wg.Wait()
	assert.LessOrEqual(t, maxHeld.Load(), int64(win), "admitted beyond the shared window")
	assert.Equal(t, int64(instances*perInstance), admitted.Load()+shed.Load())
	assert.Zero(t, shed.Load(), "a 10 s deadline for 72 dispatches of 5 ms on 4 slots")
	require.NoError(t, ctx.Err())
}
