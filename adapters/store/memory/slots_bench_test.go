package memory_test

import (
	"testing"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/storetest"
)

// BenchmarkClaimRelease: claim+release through the in-memory adapter.
func BenchmarkClaimRelease(b *testing.B) {
	storetest.BenchClaimRelease(b, memory.NewSlots(memory.SlotsOptions{}))
}
