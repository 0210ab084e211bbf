package breaker

import "sync"

// pool is the ejection budget of one worker role: it grants a breaker the right to open
// while fewer than the allowed share of the role's breakers hold it (Envoy's
// max_ejection_percent). A breaker holds its grant from the moment it opens until it closes
// again, through half-open, so a half-open breaker whose probe fails reopens without
// asking and the number of open breakers never exceeds the budget. One request that fails
// on every worker of a leg can therefore never take the whole leg out of rotation.
type pool struct {
	pct int // --cb-max-ejection-percent

	mu      sync.Mutex
	members int               // registered workers of the role
	holders map[*Breaker]bool // breakers open or half-open
}

func newPool(pct int) *pool { return &pool{pct: pct, holders: map[*Breaker]bool{}} }

// allowed is how many of the role's breakers may be open at once: pct of the members,
// rounded down, at least one. Called with mu held.
func (p *pool) allowed() int {
	return max(p.members*p.pct/100, 1)
}

// reserve grants b the right to open; a nil pool grants everything. It is called from
// gobreaker's ReadyToTrip under the breaker's lock and takes only the pool's lock.
func (p *pool) reserve(b *Breaker) bool {
	if p == nil {
		return true
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.holders[b] {
		return true
	}
	if len(p.holders) >= p.allowed() {
		return false
	}
	p.holders[b] = true
	return true
}

// release returns b's grant (b closed, or its worker was removed).
func (p *pool) release(b *Breaker) {
	if p == nil {
		return
	}
	p.mu.Lock()
	delete(p.holders, b)
	p.mu.Unlock()
}

// join and leave count the role's registered workers.
func (p *pool) join() {
	p.mu.Lock()
	p.members++
	p.mu.Unlock()
}

func (p *pool) leave(b *Breaker) {
	p.mu.Lock()
	p.members--
	delete(p.holders, b)
	p.mu.Unlock()
}
