package registry

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// A refresh replaces only what the engine reported before: the operator's models and
// context-length labels stay; detected ones follow the engine.
func TestRefreshedFactsKeepsRegisteredValues(t *testing.T) {
	t.Parallel()
	prev := ports.GRPCWorkerInfo{Models: []string{"m1"}, Labels: map[string]string{"max_context_length": "4096", "tp_size": "1"}}
	now := ports.GRPCWorkerInfo{Models: []string{"m2"}, Labels: map[string]string{"max_context_length": "8192", "tp_size": "2"}}
	for _, c := range []struct {
		name    string
		w       worker.Worker
		want    worker.Worker
		changed bool
	}{
		{"detected values follow the engine",
			worker.Worker{Models: []string{"m1"}, Labels: map[string]string{"max_context_length": "4096", "tp_size": "1"}},
			worker.Worker{Models: []string{"m2"}, Labels: map[string]string{"max_context_length": "8192", "tp_size": "1"}}, true},
		{"registered values stay",
			worker.Worker{Models: []string{"mine"}, Labels: map[string]string{"max_context_length": "1024"}},
			worker.Worker{Models: []string{"mine"}, Labels: map[string]string{"max_context_length": "1024"}}, false},
		{"nothing changed", worker.Worker{Models: []string{"m2"}, Labels: map[string]string{"max_context_length": "8192"}},
			worker.Worker{Models: []string{"m2"}, Labels: map[string]string{"max_context_length": "8192"}}, false},
	} {
		p := prev
		if c.name == "nothing changed" {
			p = now
		}
		got, changed := refreshedFacts(c.w, p, now)
		assert.Equal(t, c.changed, changed, c.name)
		assert.Equal(t, c.want, got, c.name)
	}
	w := worker.Worker{Labels: map[string]string{"max_context_length": "4096"}}
	_, _ = refreshedFacts(w, prev, now)
	assert.Equal(t, "4096", w.Labels["max_context_length"], "the registration's map is not written")
}
