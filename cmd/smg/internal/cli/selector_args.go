package cli

import "strings"

// selectorFlags take several key=value pairs after the flag, as SMG's do (seed "Kubernetes
// Service Discovery": `--prefill-selector app=sglang role=prefill`).
var selectorFlags = map[string]bool{
	"--prefill-selector": true, "--decode-selector": true, "--encode-selector": true, "--selector": true,
}

// splitSelectors rewrites `--X-selector a=b c=d` as `--X-selector a=b --X-selector c=d`
// before cobra sees the arguments: the tokens after a selector flag that contain "=" and do
// not start with "-" belong to it. Arguments after "--" are left alone.
func splitSelectors(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		out = append(out, a)
		if !selectorFlags[a] {
			continue
		}
		if i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
		for i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") && strings.Contains(args[i+1], "=") {
			i++
			out = append(out, a, args[i])
		}
	}
	return out
}
