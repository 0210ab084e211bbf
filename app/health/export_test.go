package health

// SetProbeConcurrency sets how many probes c runs at once (probeConcurrency by default).
// Call it before Start.
func SetProbeConcurrency(c *Checker, n int) { c.pool = n }
