package tenants

import (
	"crypto/sha256"
	"slices"

	"github.com/smg-go/smg/domain/tenant"
)

// Directory is one parsed tenants file: tenants by name and by key digest. It is never
// changed once built (a reload builds a new one), so readers need no lock.
type Directory struct {
	byName   map[string]tenant.Tenant
	byDigest map[[sha256.Size]byte]tenant.Tenant
	names    []string // file order
}

func newDirectory() *Directory {
	return &Directory{byName: map[string]tenant.Tenant{}, byDigest: map[[sha256.Size]byte]tenant.Tenant{}}
}

// Len is the number of tenants.
func (d *Directory) Len() int { return len(d.byName) }

// Keys is the number of API keys (plain or as digests) the tenants hold.
func (d *Directory) Keys() int { return len(d.byDigest) }

// ByName returns the tenant called name.
func (d *Directory) ByName(name string) (tenant.Tenant, bool) {
	t, ok := d.byName[name]
	return t, ok
}

// ByKey returns the tenant holding key (compared by SHA-256 digest: the lookup time does not
// depend on how much of a wrong key matches).
func (d *Directory) ByKey(key string) (tenant.Tenant, bool) {
	t, ok := d.byDigest[sha256.Sum256([]byte(key))]
	return t, ok
}

// Tenants lists the tenants in file order.
func (d *Directory) Tenants() []tenant.Tenant {
	out := make([]tenant.Tenant, 0, len(d.names))
	for _, n := range slices.Clone(d.names) {
		out = append(out, d.byName[n])
	}
	return out
}
