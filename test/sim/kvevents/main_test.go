package kvevents_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/smg-go/smg/test/sim/kvevents"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction(kvevents.LeakedGoroutine))
}
