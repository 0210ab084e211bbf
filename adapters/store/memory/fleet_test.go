package memory_test

import (
	"testing"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/adapters/store/storetest"
	"github.com/smg-go/smg/ports"
)

func TestFleetContract(t *testing.T) {
	t.Parallel()
	storetest.RunFleetStore(t, func(*testing.T) (ports.FleetStore, ports.FleetStore) {
		f := memory.NewFleet()
		return f, f
	})
}
