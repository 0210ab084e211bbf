package config

import "strings"

// SelectorPairs splits selector flag values ("app=sglang", or several pairs in one value
// separated by commas or spaces) into key=value pairs.
func SelectorPairs(values []string) []string {
	var out []string
	for _, v := range values {
		out = append(out, strings.FieldsFunc(v, func(r rune) bool { return r == ',' || r == ' ' })...)
	}
	return out
}

// validateDiscovery checks the service-discovery flags: selectors are key=value pairs, the
// mode has a role selector (PD: prefill, decode or encode; otherwise --selector), and the
// port is a TCP port.
func (c Config) validateDiscovery() error {
	for _, f := range []struct {
		flag   string
		values []string
	}{{"--prefill-selector", c.PrefillSelector}, {"--decode-selector", c.DecodeSelector},
		{"--encode-selector", c.EncodeSelector}, {"--selector", c.Selector}} {
		for _, kv := range SelectorPairs(f.values) {
			if k, _, ok := strings.Cut(kv, "="); !ok || strings.TrimSpace(k) == "" {
				return bad(f.flag, "%q is not a key=value label pair", kv)
			}
		}
	}
	if !c.ServiceDiscovery {
		return nil
	}
	if c.ServiceDiscoveryPort < 1 || c.ServiceDiscoveryPort > 65535 {
		return bad("--service-discovery-port", "must be between 1 and 65535 (got %d)", c.ServiceDiscoveryPort)
	}
	if c.EPDDisaggregation {
		for _, f := range []struct {
			flag   string
			values []string
		}{{"--encode-selector", c.EncodeSelector}, {"--prefill-selector", c.PrefillSelector}, {"--decode-selector", c.DecodeSelector}} {
			if len(SelectorPairs(f.values)) == 0 {
				// seed "EPD": EPD discovery needs all three role selectors.
				return bad(f.flag, "EPD service discovery needs all three role selectors (--encode-selector, --prefill-selector, --decode-selector)")
			}
		}
	}
	if c.PDDisaggregation {
		if len(SelectorPairs(c.PrefillSelector))+len(SelectorPairs(c.DecodeSelector))+len(SelectorPairs(c.EncodeSelector)) == 0 {
			return bad("--service-discovery", "needs --prefill-selector, --decode-selector or --encode-selector with --pd-disaggregation")
		}
	} else if len(SelectorPairs(c.Selector)) == 0 {
		return bad("--service-discovery", "needs --selector (or --pd-disaggregation with role selectors)")
	}
	return nil
}
