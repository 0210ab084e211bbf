package cli

import (
	"math"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/stretchr/testify/assert"
)

// restoreGC puts the process's collector settings back after a test changed them.
func restoreGC(t *testing.T) {
	pct := debug.SetGCPercent(100)
	lim := debug.SetMemoryLimit(-1)
	t.Cleanup(func() {
		debug.SetGCPercent(pct)
		debug.SetMemoryLimit(lim)
	})
}

func env(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// Not run in parallel: the collector settings are the process's.
func TestTuneGCSetsTheTargetUnlessGOGCIsSet(t *testing.T) {
	restoreGC(t)
	tuneGC(env(nil), 400, nil)
	assert.Equal(t, 400, debug.SetGCPercent(100))

	tuneGC(env(map[string]string{"GOGC": "150"}), 400, nil)
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment wins (the runtime already applied it)")

	tuneGC(env(map[string]string{"GOGC": " "}), 250, nil)
	assert.Equal(t, 250, debug.SetGCPercent(100), "an empty GOGC counts as unset")
}

// A container limit gives a soft limit of 90 % of it; none leaves the heap unlimited; a
// GOMEMLIMIT in the environment is left as the runtime read it.
func TestTuneGCMemoryLimitFollowsTheContainer(t *testing.T) {
	restoreGC(t)
	t.Setenv("GOMEMLIMIT", "")
	container := uint64(1 << 30)
	tuneGCWith(env(nil), 400, memlimit.Limit(container), nil)
	assert.EqualValues(t, int64(float64(container)*0.9), debug.SetMemoryLimit(-1))

	tuneGCWith(env(nil), 400, func() (uint64, error) { return 0, memlimit.ErrNoLimit }, nil)
	assert.EqualValues(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1))

	debug.SetMemoryLimit(123 << 20)
	t.Setenv("GOMEMLIMIT", "123MiB")
	tuneGCWith(env(nil), 400, memlimit.Limit(1<<30), nil)
	assert.EqualValues(t, int64(123<<20), debug.SetMemoryLimit(-1))
}
