package admission_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/app/admission"
)

// QueuedOf counts each named tenant's queued dispatches (GET /tenants "queued"): zero for a
// tenant with none, and nothing left once the queue drained; nil without a queue.
func TestQueuedOfCountsPerTenant(t *testing.T) {
	t.Parallel()
	assert.Nil(t, admission.New(newSlots(0), admission.Options{Logger: quiet}).QueuedOf([]string{"a"}))

	h := newQueueHarness(t, admission.Options{})
	ctx := guard(t)
	for i := range 3 {
		h.enqueue(as(ctx, "batch", 0), fmt.Sprintf("batch%d", i))
	}
	h.enqueue(as(ctx, "chat", 10), "chat")
	assert.Equal(t, map[string]int64{"batch": 3, "chat": 1, "idle": 0}, h.a.QueuedOf([]string{"batch", "chat", "idle"}))
	h.drain()
	assert.Equal(t, map[string]int64{"batch": 0, "chat": 0}, h.a.QueuedOf([]string{"batch", "chat"}))
}
