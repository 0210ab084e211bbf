package cli

import (
	"log/slog"
	"runtime/debug"
	"strings"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// memLimitRatio is the share of the container's memory limit given to GOMEMLIMIT (the Go
// runtime's soft limit), leaving room for what the limit does not steer: non-Go memory and
// the runtime's own slack.
const memLimitRatio = 0.9

// tuneGC sets the garbage collector for the gateway unless the environment already does, as
// the Go runtime reads it:
//   - GOGC unset: the collector target is gogc percent (--gogc; GOGC=off or any GOGC value
//     in the environment wins);
//   - GOMEMLIMIT unset: the soft memory limit is 90 % of the cgroup memory limit when the
//     process has one (a container's), via automemlimit, so the heap never outgrows the
//     container: near the limit the collector runs as often as it must. Without a cgroup
//     limit no limit is set.
//
// It logs what it chose on log, or nothing when log is nil.
func tuneGC(env Env, gogc int, log *slog.Logger) { tuneGCWith(env, gogc, memlimit.FromCgroup, log) }

// tuneGCWith is tuneGC with the memory limit read from limit.
func tuneGCWith(env Env, gogc int, limit memlimit.Provider, log *slog.Logger) {
	if v, ok := env("GOGC"); !ok || strings.TrimSpace(v) == "" {
		debug.SetGCPercent(gogc)
		if log != nil {
			log.Debug("garbage collector target set", "gogc", gogc)
		}
	}
	opts := []memlimit.Option{memlimit.WithRatio(memLimitRatio), memlimit.WithProvider(limit)}
	if log != nil {
		opts = append(opts, memlimit.WithLogger(log))
	}
	_, _ = memlimit.Set(opts...) // no cgroup limit (or an unreadable one) leaves the limit unset
}
