package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// With --kv-events-routing the gateway lists each worker's kv_events: a worker routed on
// the approximate tree gets a note naming why; one routed by its events gets none.
func TestDoctorNotesAWorkerWithoutKVEvents(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/workers" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workers":[
{"id":"p0","url":"http://127.0.0.1:1","model_id":"m","worker_type":"prefill","connection_mode":"http","runtime_type":"sglang","status":"ready",
 "kv_events":{"state":"none","routing":"approximate","reason":"no KV-event subscription: an HTTP worker needs the kv_events_endpoint label"}},
{"id":"p1","url":"http://127.0.0.1:3","model_id":"m","worker_type":"prefill","connection_mode":"http","runtime_type":"sglang","status":"ready",
 "kv_events":{"state":"live","routing":"events"}},
{"id":"d0","url":"http://127.0.0.1:2","model_id":"m","worker_type":"decode","connection_mode":"http","runtime_type":"sglang","status":"ready"}]}`))
	}))
	t.Cleanup(srv.Close)
	code, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--json", "--no-health-probe"}, nil)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out+errOut)
	var notes []string
	for _, f := range rep.Findings {
		if f.Kind == "kv_events_unavailable" {
			notes = append(notes, f.WorkerID)
			assert.Equal(t, "note", f.Severity)
			assert.Contains(t, f.Message, "kv_events_endpoint")
		}
	}
	assert.Equal(t, []string{"p0"}, notes, out)
	_ = code
}

// A fleet where no worker publishes events (the default) gets no note for it.
func TestDoctorIsQuietWhenNoWorkerHasKVEvents(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"workers":[
{"id":"p0","url":"http://127.0.0.1:1","model_id":"m","worker_type":"prefill","connection_mode":"http","runtime_type":"sglang","status":"ready",
 "kv_events":{"state":"none","routing":"approximate","reason":"no KV-event subscription"}},
{"id":"d0","url":"http://127.0.0.1:2","model_id":"m","worker_type":"decode","connection_mode":"http","runtime_type":"sglang","status":"ready",
 "kv_events":{"state":"connecting","routing":"approximate","reason":"the KV-event stream is not connected"}}]}`))
	}))
	t.Cleanup(srv.Close)
	_, out, errOut := runCLI([]string{"doctor", "--url", srv.URL, "--json", "--no-health-probe"}, nil)
	var rep doctorOut
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out+errOut)
	var notes []string
	for _, f := range rep.Findings {
		if f.Kind == "kv_events_unavailable" {
			notes = append(notes, f.WorkerID)
		}
	}
	assert.Equal(t, []string{"d0"}, notes, "only the subscription that does not deliver: %s", out)
}
