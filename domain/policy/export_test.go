package policy

// TreeArenaBytes returns the bytes the text arenas of p's trees have mapped outside the Go
// heap (for the memory benchmarks).
func TreeArenaBytes(p *CacheAware) int {
	p.mu.RLock()
	defer p.mu.RUnlock()
	n := 0
	for _, ct := range p.trees {
		ct.mu.Lock()
		n += ct.t.arena.mapped
		ct.mu.Unlock()
	}
	return n
}
