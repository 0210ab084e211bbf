package resilience_test

import (
	"encoding/json"
	"net"
	"net/http"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// bound is the hang guard of every faulted request: far below the simulators' own
// deadlines (HandoffTimeout 30 s, HangMax 60 s), so a request that ends within it was ended
// by the gateway.
const bound = 10 * time.Second

// generate is a SGLang /generate body: a text prompt, max_new_tokens, stream, and the
// simulator faults (none when empty).
func generate(prompt string, n int, stream bool, faults ...string) map[string]any {
	b := map[string]any{"text": prompt, "sampling_params": map[string]any{"max_new_tokens": n}, "stream": stream}
	addFaults(b, faults)
	return b
}

// chat is a /v1/chat/completions body for the simulator's model with one user turn.
func chat(prompt string, n int, stream bool, faults ...string) map[string]any {
	b := map[string]any{"model": "sim-model", "messages": []map[string]any{{"role": "user", "content": prompt}},
		"max_tokens": n, "stream": stream}
	addFaults(b, faults)
	return b
}

func addFaults(b map[string]any, faults []string) {
	switch len(faults) {
	case 0:
	case 1:
		b["sim_fault"] = faults[0]
	default:
		b["sim_fault"] = faults
	}
}

// chatText is the text the simulator's decode generates for chat(prompt, n) after a real
// handoff.
func chatText(prompt string, n int) string {
	return sim.HandoffText(sim.ChatPrompt(sim.Message{Role: "user", Content: prompt}), n)
}

// errorBody is the gateway's error shape (smg-spec.md §6.1).
type errorBody struct {
	Error struct {
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Message string  `json:"message"`
		Param   *string `json:"param"`
	} `json:"error"`
}

// requireError checks a gateway error answer: status, JSON content type, X-SMG-Error-Code,
// the exact key set {"error":{"type","code","message","param":null}}, errs.Type as
// type and the code; it returns the message.
func requireError(t *testing.T, r *fleet.Response, status int, code string) string {
	t.Helper()
	require.Equal(t, status, r.Status, "body: %s", r.Body)
	assert.Equal(t, "application/json", r.Header.Get("Content-Type"))
	assert.Equal(t, code, r.Header.Get(wire.HeaderErrorCode))
	var shape map[string]map[string]any
	require.NoError(t, json.Unmarshal(r.Body, &shape), "body: %s", r.Body)
	require.Len(t, shape, 1, "one top-level key: %s", r.Body)
	keys := make([]string, 0, 4)
	for k := range shape["error"] {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	assert.Equal(t, []string{"code", "message", "param", "type"}, keys)
	var e errorBody
	require.NoError(t, json.Unmarshal(r.Body, &e))
	assert.Nil(t, e.Error.Param)
	assert.Equal(t, errs.Type(status), e.Error.Type)
	assert.Equal(t, code, e.Error.Code)
	return e.Error.Message
}

// streamError checks that a streamed answer ends with exactly one error event carrying
// code and type, followed by [DONE], and returns the error object.
func streamError(t *testing.T, events []fleet.Event, typ, code string) map[string]any {
	t.Helper()
	require.GreaterOrEqual(t, len(events), 2, "events: %+v", events)
	assert.True(t, events[len(events)-1].Done(), "the stream ends with [DONE]: %+v", events)
	last := events[len(events)-2]
	require.True(t, last.IsError(), "an error event precedes [DONE]: %+v", events)
	e, _ := last.JSON(t)["error"].(map[string]any)
	require.NotNil(t, e)
	assert.Equal(t, code, e["code"])
	assert.Equal(t, typ, e["type"])
	errs := 0
	for _, ev := range events {
		if ev.IsError() {
			errs++
		}
	}
	assert.Equal(t, 1, errs, "exactly one error event")
	return e
}

// chatStreamText concatenates the delta contents of a chat completion stream.
func chatStreamText(t *testing.T, events []fleet.Event) string {
	t.Helper()
	var b strings.Builder
	for _, ev := range events {
		if ev.Done() || ev.IsError() {
			continue
		}
		choices, _ := ev.JSON(t)["choices"].([]any)
		for _, c := range choices {
			if d, ok := c.(map[string]any)["delta"].(map[string]any); ok {
				s, _ := d["content"].(string)
				b.WriteString(s)
			}
		}
	}
	return b.String()
}

// closedAddr returns a loopback address nobody listens on (connections are refused).
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// refusingWorker is a POST /workers body for a worker on a closed port, with health checks
// disabled so it stays routable and its model given (nothing can be detected there). extra
// fields are merged in (bootstrap_port, ...).
func refusingWorker(t *testing.T, role string, extra map[string]any) map[string]any {
	b := map[string]any{"url": "http://" + closedAddr(t), "worker_type": role, "runtime_type": "sglang",
		"models": []string{"sim-model"}, "health": map[string]any{"disable_health_check": true}}
	for k, v := range extra {
		b[k] = v
	}
	return b
}

// waitIdle waits until no simulator has a request in flight (every leg ended: answered,
// aborted or cut).
func waitIdle(t *testing.T, ss ...*sim.Server) {
	t.Helper()
	require.Eventually(t, func() bool {
		for _, s := range ss {
			if s.Stats().Running != 0 {
				return false
			}
		}
		return true
	}, bound, 5*time.Millisecond, "simulators still busy")
}

// cancelledOnly asserts that every request the simulator received was aborted by the
// gateway: none answered, none waited out its handoff. A leg the gateway cancelled can
// reach the engine after the client has its answer (counted in requests before it runs
// and is aborted), so the counters are read once nothing runs and they agree, or at bound.
func cancelledOnly(t *testing.T, s *sim.Server, what string) {
	t.Helper()
	var st sim.Stats
	for deadline := time.Now().Add(bound); ; time.Sleep(5 * time.Millisecond) {
		st = s.Stats()
		if st.Running == 0 && st.Requests == st.Aborted || time.Now().After(deadline) {
			break
		}
	}
	assert.Equal(t, st.Requests, st.Aborted, "%s: every leg that arrived was cancelled (%+v)", what, st)
	assert.Zero(t, st.Errors, "%s answered no error itself", what)
	assert.Zero(t, st.UnmatchedRooms, "%s waited out no handoff", what)
	assert.Zero(t, st.HandoffsReceived+st.HandoffsSent, "%s completed no handoff", what)
}

// cb returns the worker's breaker series from a scrape: state (-1 when absent), and the
// success and failure outcome counts.
func cb(t *testing.T, g *fleet.Gateway, url string) (state, success, failure float64) {
	t.Helper()
	m := g.Metrics(t)
	state = -1
	if s := m.Find("smg_worker_cb_state", "worker", url); len(s) == 1 {
		state = s[0].Value
	}
	return state, m.Sum("smg_worker_cb_outcomes_total", "worker", url, "outcome", "success"),
		m.Sum("smg_worker_cb_outcomes_total", "worker", url, "outcome", "failure")
}

// cbSettled asserts url's breaker series (state, success, failure) equal want, waiting
// (bounded) for them: a request's blame is settled just after its answer was written, so a
// client can read the answer first.
func cbSettled(t *testing.T, g *fleet.Gateway, url string, want []float64, msg string) {
	t.Helper()
	var got []float64
	deadline := time.Now().Add(bound)
	for {
		s, ok, fail := cb(t, g, url)
		got = []float64{s, ok, fail}
		if slices.Equal(got, want) || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	assert.Equal(t, want, got, msg)
}

// workerID returns the id of the registered worker at url.
func workerID(t *testing.T, g *fleet.Gateway, url string) string {
	t.Helper()
	for _, w := range g.Workers(t) {
		if w.URL == url {
			return w.ID
		}
	}
	t.Fatalf("no worker at %s", url)
	return ""
}

// routedURL returns the URL of the worker whose id the response's routed-worker header
// names (the header carries the worker id, never its address).
func routedURL(t *testing.T, g *fleet.Gateway, h http.Header) string {
	t.Helper()
	id := h.Get(wire.HeaderRoutedWorker)
	require.NotEmpty(t, id, "routed-worker header")
	for _, w := range g.Workers(t) {
		if w.ID == id {
			return w.URL
		}
	}
	t.Fatalf("no worker with id %s", id)
	return ""
}
