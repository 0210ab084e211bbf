package cli

import (
	"strings"
)

// joinPrefillPorts hand-parses `--prefill <url> [bootstrap_port|none]` before cobra sees
// the arguments, as SMG does (smg-spec.md §8.1): the token after the URL belongs to the
// --prefill when it does not start with "-" — it must then be a port (digits) or "none"
// (any case). Such a pair becomes the single value "URL PORT", which prefillValue.Set
// parses (and rejects when the port is not 1..65535 or not a port at all). "--prefill=URL"
// is handled the same way, and so is `--encode <url> [bootstrap_port]` (EPD). Arguments
// after "--" are left alone.
func joinPrefillPorts(args []string) []string {
	args = splitSelectors(args)
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		var url, flag string
		switch {
		case (a == "--prefill" || a == "--encode") && i+1 < len(args):
			flag = a
			i++
			url = args[i]
		case strings.HasPrefix(a, "--prefill="), strings.HasPrefix(a, "--encode="):
			flag, url, _ = strings.Cut(a, "=")
		default:
			out = append(out, a)
			continue
		}
		if i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && args[i+1] != "" {
			i++
			url += " " + args[i]
		}
		out = append(out, flag, url)
	}
	return out
}
