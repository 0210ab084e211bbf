package handoff

import "github.com/smg-go/smg/domain/wire"

// Route is a data-plane API served through a PD pair (seed "Supported APIs").
type Route uint8

// The PD routes. RouteUnknown is the zero value.
const (
	RouteUnknown Route = iota
	RouteGenerate
	RouteChat
	RouteCompletions
	RouteMessages
	RouteResponses
	RouteRerank
)

// RouteFor maps a client path to its Route; ok is false for paths that are not PD routes
// (count_tokens, embeddings, ...). Both /rerank and /v1/rerank map to RouteRerank.
func RouteFor(path string) (r Route, ok bool) {
	switch path {
	case wire.PathGenerate:
		return RouteGenerate, true
	case wire.PathChatCompletions:
		return RouteChat, true
	case wire.PathCompletions:
		return RouteCompletions, true
	case wire.PathMessages:
		return RouteMessages, true
	case wire.PathResponses:
		return RouteResponses, true
	case wire.PathRerank, wire.PathRerankLegacy:
		return RouteRerank, true
	}
	return RouteUnknown, false
}

// Path is the engine path both legs are POSTed to (smg-spec.md §2.1), "" for RouteUnknown.
func (r Route) Path() string {
	switch r {
	case RouteGenerate:
		return wire.PathGenerate
	case RouteChat:
		return wire.PathChatCompletions
	case RouteCompletions:
		return wire.PathCompletions
	case RouteMessages:
		return wire.PathMessages
	case RouteResponses:
		return wire.PathResponses
	case RouteRerank:
		return wire.PathRerank
	}
	return ""
}

// String is the engine path, or "unknown".
func (r Route) String() string {
	if p := r.Path(); p != "" {
		return p
	}
	return "unknown"
}

// Samples reports whether the route has an n (parallel sampling) parameter: chat and
// completions (top-level n) and /generate (sampling_params.n).
func (r Route) Samples() bool {
	return r == RouteChat || r == RouteCompletions || r == RouteGenerate
}

// Endpoint is the route's `endpoint` metric label (smg-spec.md §7.2): chat, completions,
// generate, messages, responses, rerank; "other" for RouteUnknown.
func (r Route) Endpoint() string {
	switch r {
	case RouteChat:
		return "chat"
	case RouteCompletions:
		return "completions"
	case RouteGenerate:
		return "generate"
	case RouteMessages:
		return "messages"
	case RouteResponses:
		return "responses"
	case RouteRerank:
		return "rerank"
	}
	return "other"
}
