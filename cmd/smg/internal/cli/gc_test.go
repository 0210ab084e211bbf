package cli

import (
	"log/slog"
	"math"
	"runtime/debug"
	"strings"
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
	tuneGC(env(nil), 400, 0, nil)
	assert.Equal(t, 400, debug.SetGCPercent(100))

	tuneGC(env(map[string]string{"GOGC": "150"}), 400, 0, nil)
	assert.Equal(t, 100, debug.SetGCPercent(100), "GOGC in the environment wins (the runtime already applied it)")

	tuneGC(env(map[string]string{"GOGC": " "}), 250, 0, nil)
	assert.Equal(t, 250, debug.SetGCPercent(100), "an empty GOGC counts as unset")
}

func limits(cgroup, machine uint64) memSources {
	p := func(n uint64) memlimit.Provider {
		return func() (uint64, error) {
			if n == 0 {
				return 0, memlimit.ErrNoLimit
			}
			return n, nil
		}
	}
	return memSources{cgroup: p(cgroup), machine: p(machine)}
}

// The soft memory limit: GOMEMLIMIT wins, then --memory-limit-mb, then 90 % of a container
// limit, then 50 % of the machine's memory; each choice is logged with its source.
func TestTuneGCMemoryLimit(t *testing.T) {
	restoreGC(t)
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))

	tuneGCWith(env(nil), 400, 0, limits(1<<30, 16<<30), log)
	assert.EqualValues(t, int64(966367641), debug.SetMemoryLimit(-1), "90 % of the container")
	assert.Contains(t, logs.String(), "memory_limit_mb=921")
	assert.Contains(t, logs.String(), `source="90% of the cgroup memory limit"`)

	tuneGCWith(env(nil), 400, 0, limits(0, 16<<30), log)
	assert.EqualValues(t, int64(8<<30), debug.SetMemoryLimit(-1), "no container: half the machine")
	assert.Contains(t, logs.String(), "50% of the machine")

	tuneGCWith(env(nil), 400, 1500, limits(1<<30, 16<<30), log)
	assert.EqualValues(t, int64(1500<<20), debug.SetMemoryLimit(-1), "the flag wins over both")

	debug.SetMemoryLimit(123 << 20) // as the runtime read GOMEMLIMIT=123MiB
	tuneGCWith(env(map[string]string{"GOMEMLIMIT": "123MiB"}), 400, 1500, limits(1<<30, 16<<30), log)
	assert.EqualValues(t, int64(123<<20), debug.SetMemoryLimit(-1), "GOMEMLIMIT wins over the flag")
	assert.Contains(t, logs.String(), "source=GOMEMLIMIT")

	debug.SetMemoryLimit(math.MaxInt64)
	tuneGCWith(env(nil), 400, 0, limits(0, 0), log)
	assert.EqualValues(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "nothing known: no limit")
}
