package cli

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/smg-go/smg/app/config"
)

// usageError is a bad command line or environment value: printed as one line, exit code 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// Exit codes of `smg launch` besides 0 (served, then drained cleanly) and 2 (bad flag,
// argument, environment value or configuration).
const (
	// exitRunFailed: start-up or the demo fleet failed after the configuration was accepted.
	exitRunFailed = 1
	// exitRequestsCut: SIGTERM's drain ran out of --shutdown-grace-period-secs and cut the
	// requests still in flight (503 server_shutting_down, SSE error event + [DONE]).
	exitRequestsCut = 3
)

// exitCodeFor maps an error to the process exit code: 3 when the shutdown grace period cut
// requests (*cutError), 1 when the gateway or the demo fleet failed after the configuration
// was accepted (*runError), else 2: a bad flag, argument, environment value or configuration
// (*usageError, *config.FlagError, cobra's own errors).
func exitCodeFor(err error) int {
	var ce *cutError
	if errors.As(err, &ce) {
		return exitRequestsCut
	}
	var re *runError
	var fe *config.FlagError
	if errors.As(err, &re) && !errors.As(err, &fe) {
		return exitRunFailed
	}
	return 2
}

// flagError rewrites pflag's parse errors into one line naming the flag:
// `invalid value "abc" for --port: expected a whole number`.
func flagError(err error) error {
	var ive *pflag.InvalidValueError
	if errors.As(err, &ive) {
		return valueError(ive.GetFlag(), ive.GetValue(), "", ive.Unwrap())
	}
	return &usageError{msg: err.Error()}
}

// valueError formats a rejected value of flag f; source is "" for the command line or the
// environment variable name it came from.
func valueError(f *pflag.Flag, value, source string, cause error) error {
	where := "--" + f.Name
	if source != "" {
		where = source + " (--" + f.Name + ")"
	}
	reason := explain(f, cause)
	if f.Name == "prefill" || f.Name == "encode" { // the cause already names the URL and the port
		return usagef("invalid value for %s: %s", where, reason)
	}
	return usagef("invalid value %q for %s: %s", value, where, reason)
}

// explain turns strconv's errors into words for the flag's type.
func explain(f *pflag.Flag, cause error) string {
	var ne *strconv.NumError
	if !errors.As(cause, &ne) {
		return cause.Error()
	}
	if errors.Is(ne.Err, strconv.ErrRange) {
		return "out of range"
	}
	switch t := f.Value.Type(); {
	case t == "bool":
		return "expected true or false"
	case strings.HasPrefix(t, "int") || strings.HasPrefix(t, "uint"):
		return "expected a whole number"
	default:
		return "expected a number"
	}
}
