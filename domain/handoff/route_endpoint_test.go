package handoff_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/handoff"
)

// Every PD route has the seed's endpoint label, and the rest are "other".
func TestRouteEndpointLabels(t *testing.T) {
	want := map[handoff.Route]string{
		handoff.RouteChat: "chat", handoff.RouteCompletions: "completions", handoff.RouteGenerate: "generate",
		handoff.RouteMessages: "messages", handoff.RouteResponses: "responses", handoff.RouteRerank: "rerank",
		handoff.RouteUnknown: "other",
	}
	for r, label := range want {
		assert.Equal(t, label, r.Endpoint(), "route %d", r)
	}
}
