package config

// validateSelectivePD checks the --selective-pd-* thresholds: counts, 0 = off.
func (c Config) validateSelectivePD() error {
	s := c.SelectivePD
	switch {
	case s.UncachedTokens < 0:
		return bad("--selective-pd-uncached-tokens", "must be >= 0 (0 = off), got %d", s.UncachedTokens)
	case s.PrefillBusyRequests < 0:
		return bad("--selective-pd-prefill-busy-requests", "must be >= 0 (0 = off), got %d", s.PrefillBusyRequests)
	case s.PrefillOnlyMaxTokens < 0:
		return bad("--selective-pd-prefill-only-max-tokens", "must be >= 0 (0 = off), got %d", s.PrefillOnlyMaxTokens)
	case s.DecodeMaxRequests < 0:
		return bad("--selective-pd-decode-max-requests", "must be >= 0 (0 = no guard), got %d", s.DecodeMaxRequests)
	}
	return nil
}
