package cli

import (
	"strconv"
	"strings"

	"github.com/spf13/pflag"
)

// EnvName is the environment variable that sets flag name: SMG_ + upper snake case
// (--health-check-timeout-secs → SMG_HEALTH_CHECK_TIMEOUT_SECS).
func EnvName(flag string) string {
	return "SMG_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// isList reports whether a flag repeats; its environment variable holds comma-separated
// values (SMG_PREFILL="http://p0:8000 8998,http://p1:8000 none").
func isList(f *pflag.Flag) bool {
	return f.Name == "prefill" || f.Name == "encode" || f.Value.Type() == "stringArray"
}

// applyEnv sets every flag not given on the command line from its SMG_* variable (command
// line > environment > default). Empty variables are ignored. The first bad value is
// returned as a usageError naming the variable and the flag.
func applyEnv(fs *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var firstErr error
	fs.VisitAll(func(f *pflag.Flag) {
		if firstErr != nil || f.Changed || f.Name == "help" {
			return
		}
		name := EnvName(f.Name)
		raw, ok := lookup(name)
		if !ok || strings.TrimSpace(raw) == "" {
			return
		}
		values := []string{strings.TrimSpace(raw)}
		if isList(f) {
			values = values[:0]
			for _, v := range strings.Split(raw, ",") {
				if v = strings.TrimSpace(v); v != "" {
					values = append(values, v)
				}
			}
		}
		for _, v := range values {
			if err := f.Value.Set(v); err != nil {
				firstErr = valueError(f, v, name, err)
				return
			}
		}
		f.Changed = true
	})
	return firstErr
}

// portFromEnv returns the PORT variable (Cloud Run), which overrides --port and SMG_PORT.
func portFromEnv(lookup func(string) (string, bool)) (int, bool, error) {
	raw, ok := lookup("PORT")
	raw = strings.TrimSpace(raw)
	if !ok || raw == "" {
		return 0, false, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return 0, false, usagef("invalid value %q for PORT (overrides --port): expected a whole number", raw)
	}
	return n, true, nil
}
