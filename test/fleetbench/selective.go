package fleetbench

import (
	"fmt"
	"strconv"
	"strings"
)

// selectiveCell is one value of Config.SelectivePD: the gateway flag, the decodes' kv_role
// and the policy-column suffix. The zero value is a plain cell.
type selectiveCell struct {
	args   []string
	kvRole string
	label  string
}

// selectiveCells expands Config.SelectivePD (nil: one plain cell).
func selectiveCells(ns []int) []selectiveCell {
	if len(ns) == 0 {
		return []selectiveCell{{}}
	}
	out := make([]selectiveCell, 0, len(ns))
	for _, n := range ns {
		out = append(out, selectiveCell{args: []string{"--selective-pd-uncached-tokens=" + strconv.Itoa(n)},
			kvRole: "kv_both", label: " spd=" + strconv.Itoa(n)})
	}
	return out
}

// ParseSelectivePD splits a comma list of --selective-pd-uncached-tokens values (each >= 0).
func ParseSelectivePD(list string) ([]int, error) {
	var out []int
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("fleetbench: selective-PD threshold %q: want an integer >= 0", s)
		}
		out = append(out, n)
	}
	return out, nil
}
