package cli

import (
	"fmt"
	"strings"
)

// levelFromRustLog maps a RUST_LOG filter (SMG's Debug Logging example:
// `RUST_LOG=smg=info,smg::routers=debug`) onto --log-level: the most verbose level among
// the directives that name smg (`smg`, `smg::<module>`) or no target at all; trace is debug
// and off is error, the nearest levels smg has. Directives for other crates are ignored.
// applies is false when no directive concerns smg. Error: a directive whose level is not
// one of error, warn, info, debug, trace, off.
func levelFromRustLog(raw string) (level string, applies bool, err error) {
	rank := map[string]int{"off": 0, "error": 1, "warn": 2, "info": 3, "debug": 4, "trace": 5}
	names := []string{"error", "error", "warn", "info", "debug", "debug"}
	best := -1
	for _, d := range strings.Split(raw, ",") {
		d = strings.TrimSpace(d)
		if d == "" {
			continue
		}
		target, lvl, hasTarget := strings.Cut(d, "=")
		if !hasTarget {
			target, lvl = "", target
		}
		if hasTarget && target != "smg" && !strings.HasPrefix(target, "smg::") {
			continue
		}
		r, ok := rank[strings.ToLower(strings.TrimSpace(lvl))]
		if !ok {
			return "", false, usagef("invalid value %q for RUST_LOG: %q is not a level (error, warn, info, debug, trace, off); or set --log-level", raw, lvl)
		}
		best = max(best, r)
	}
	if best < 0 {
		return "", false, nil
	}
	return names[best], true, nil
}

// portNote says why PORT won over a different --port (Cloud Run and other platforms set
// PORT, and the platform's port is where traffic arrives).
func portNote(flagPort, envPort int) string {
	return fmt.Sprintf("PORT=%d overrides --port %d: the platform's PORT is where its traffic arrives", envPort, flagPort)
}
