package cli

import (
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// Shares of memory given to the Go runtime's soft limit (GOMEMLIMIT) when neither the
// GOMEMLIMIT environment variable nor --memory-limit-mb sets one: 90 % of the container's
// cgroup limit (room for non-Go memory and the runtime's slack), else 50 % of the machine's
// memory (a host without a container limit is shared, often with the engines).
const (
	cgroupLimitRatio  = 0.9
	machineLimitRatio = 0.5
)

// memSources are where the automatic memory limit is read from.
type memSources struct {
	cgroup, machine memlimit.Provider
}

var osMemSources = memSources{cgroup: memlimit.FromCgroup, machine: memlimit.FromSystem}

// tuneGC sets the garbage collector for the gateway, as the Go runtime reads the
// environment:
//   - GOGC unset: the collector target is gogc percent (--gogc; GOGC=off or any GOGC value
//     in the environment wins);
//   - the soft memory limit (runtime/debug.SetMemoryLimit) is GOMEMLIMIT when set in the
//     environment, else limitMB MiB (--memory-limit-mb) when > 0, else 90 % of the cgroup
//     memory limit (cgroup v2 memory.max or v1) when the process has one, else 50 % of the
//     machine's memory. Near the limit the collector runs as often as it must, so garbage
//     left by a burst under a high --gogc cannot outgrow it.
//
// It logs the limit and its source at INFO on log, or nothing when log is nil.
func tuneGC(env Env, gogc, limitMB int, log *slog.Logger) {
	tuneGCWith(env, gogc, limitMB, osMemSources, log)
}

// tuneGCWith is tuneGC with the memory read from src.
func tuneGCWith(env Env, gogc, limitMB int, src memSources, log *slog.Logger) {
	if v, ok := env("GOGC"); !ok || strings.TrimSpace(v) == "" {
		debug.SetGCPercent(gogc)
		if log != nil {
			log.Debug("garbage collector target set", "gogc", gogc)
		}
	}
	limit, source := chooseMemoryLimit(env, limitMB, src)
	if limit > 0 {
		debug.SetMemoryLimit(limit)
	} else {
		limit = debug.SetMemoryLimit(-1)
	}
	if log != nil {
		log.Info("Go soft memory limit", "memory_limit_mb", limit>>20, "source", source)
	}
}

// chooseMemoryLimit returns the soft memory limit in bytes and where it comes from; 0 leaves
// the runtime's (GOMEMLIMIT as the runtime read it, or none when nothing is known).
func chooseMemoryLimit(env Env, limitMB int, src memSources) (int64, string) {
	if v, ok := env("GOMEMLIMIT"); ok && strings.TrimSpace(v) != "" {
		return 0, "GOMEMLIMIT"
	}
	if limitMB > 0 {
		return int64(limitMB) << 20, "--memory-limit-mb"
	}
	if n, err := src.cgroup(); err == nil && n > 0 {
		return int64(float64(n) * cgroupLimitRatio), "90% of the cgroup memory limit"
	}
	if n, err := src.machine(); err == nil && n > 0 {
		return int64(float64(n) * machineLimitRatio), "50% of the machine's memory"
	}
	return 0, "none (no cgroup limit, machine memory unknown)"
}
