package policy_test

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/policy"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func bucket(t *testing.T, abs int) (*policy.Bucket, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	o := policy.DefaultOptions()
	o.Now = clk.Now
	o.BalanceAbsThreshold = abs
	p, ok := mustNew(t, "bucket", policy.LegPrefill, o).(*policy.Bucket)
	require.True(t, ok)
	return p, clk
}

func TestBucketInitialRangesSplit4096(t *testing.T) {
	t.Parallel()
	p, _ := bucket(t, math.MaxInt32) // imbalance test off
	ws := workers(4)
	cases := []struct {
		size int
		want int
	}{{0, 0}, {1023, 0}, {1024, 1}, {2047, 1}, {2048, 2}, {3071, 2}, {3072, 3}, {100_000, 3}}
	for _, tc := range cases {
		assert.Equal(t, tc.want, p.Select(ws, &policy.Request{Model: "m", Tokens: tc.size}), "size %d", tc.size)
	}
	assert.Equal(t, 1, p.Select(ws, &policy.Request{Model: "m", Text: strings.Repeat("é", 1500)}), "size in runes, not bytes")
	assert.Equal(t, 1, p.Select(ws, &policy.Request{Model: "m", Text: strings.Repeat("日", 1100) + "abc"}), "3-byte runes")
	assert.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Text: strings.Repeat("😀", 1023)}), "4-byte runes")
}

func TestBucketSendsToTheLightestWorkerWhenImbalanced(t *testing.T) {
	t.Parallel()
	p, clk := bucket(t, 64)
	ws := workers(4)
	require.Equal(t, 3, p.Select(ws, &policy.Request{Model: "m", Tokens: 5000}))
	// totals {3: 5000}: 5000 − 0 > 64 and 5000 > 1.5 × 0, so a large request avoids 3
	got := p.Select(ws, &policy.Request{Model: "m", Tokens: 4000})
	assert.NotEqual(t, 3, got)
	// after the 5 s window the totals are gone and the range owner wins again
	clk.Advance(6 * time.Second)
	assert.Equal(t, 3, p.Select(ws, &policy.Request{Model: "m", Tokens: 4000}))
}

func TestBucketRecomputesRangesFromTheWindow(t *testing.T) {
	t.Parallel()
	p, clk := bucket(t, math.MaxInt32)
	ws := workers(4)
	require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Tokens: 1})) // t=0: first pick
	clk.Advance(time.Second)
	for s := 2; s <= 100; s++ { // all small: worker 0's initial range
		require.Equal(t, 0, p.Select(ws, &policy.Request{Model: "m", Tokens: s}))
	}
	clk.Advance(4500 * time.Millisecond) // 5.5 s: recompute; the t=0 entry has expired
	// sizes 2..100 (total 5049, 1262.25 per worker): ranges end at 50, 71 and 87
	cases := []struct{ size, want int }{{10, 0}, {50, 0}, {51, 1}, {71, 1}, {72, 2}, {87, 2}, {88, 3}, {5000, 3}}
	for _, tc := range cases {
		assert.Equal(t, tc.want, p.Select(ws, &policy.Request{Model: "m", Tokens: tc.size}), "size %d", tc.size)
	}
}

func TestBucketOwnerNotACandidateFallsBackToRandom(t *testing.T) {
	t.Parallel()
	p, _ := bucket(t, math.MaxInt32)
	ws := workers(4)
	require.Equal(t, 3, p.Select(ws, &policy.Request{Model: "m", Tokens: 9000}))
	got := p.Select(ws[:2], &policy.Request{Model: "m", Tokens: 9000})
	assert.True(t, got == 0 || got == 1)
	p.RemoveWorker(ws[3].URL) // three owners left: ranges reset to thirds of 4096
	assert.Equal(t, 1, p.Select(ws[:3], &policy.Request{Model: "m", Tokens: 2000}))
	assert.Equal(t, 2, p.Select(ws[:3], &policy.Request{Model: "m", Tokens: 9000}))
}
