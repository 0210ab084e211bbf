package fleetbench

import (
	"fmt"
	"strings"
)

// Variant is one gateway configuration a cell is run under, beside the others in the same
// run (Config.Variants): Label suffixes the policy column, Args are extra `smg launch`
// flags for every gateway of the cell.
type Variant struct {
	Label string
	Args  []string
}

// ParseVariant reads `label=flag flag…` (flags split on spaces; an empty list is a plain
// cell under that label), as `smg-bench fleet --variant` takes it.
func ParseVariant(s string) (Variant, error) {
	label, args, ok := strings.Cut(s, "=")
	label = strings.TrimSpace(label)
	if !ok || label == "" || strings.ContainsAny(label, " \t") {
		return Variant{}, fmt.Errorf("fleetbench: variant %q: want label=flags (a label without spaces)", s)
	}
	v := Variant{Label: label, Args: strings.Fields(args)}
	for _, a := range v.Args {
		if !strings.HasPrefix(a, "-") {
			return Variant{}, fmt.Errorf("fleetbench: variant %q: %q is not a flag (write --name=value)", s, a)
		}
	}
	return v, nil
}

// ParseVariants reads every `--variant` value (ParseVariant) and refuses a label given
// twice: the report tells cells apart by their label, so two variants under one label
// would print as one configuration.
func ParseVariants(list []string) ([]Variant, error) {
	var vs []Variant
	seen := map[string]string{}
	for _, s := range list {
		v, err := ParseVariant(s)
		if err != nil {
			return nil, err
		}
		if prev, dup := seen[v.Label]; dup {
			return nil, fmt.Errorf("fleetbench: variants %q and %q share the label %q (labels tell the cells apart)", prev, s, v.Label)
		}
		seen[v.Label] = s
		vs = append(vs, v)
	}
	return vs, nil
}

// variants expands Config.Variants (none: one plain cell).
func variants(vs []Variant) []Variant {
	if len(vs) == 0 {
		return []Variant{{}}
	}
	return vs
}

// label is the policy-column suffix (" <label>", or "" for the plain cell).
func (v Variant) label() string {
	if v.Label == "" {
		return ""
	}
	return " " + v.Label
}
