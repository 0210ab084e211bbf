package registry_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// dpEngine is an SGLang HTTP engine whose /server_info reports dp_size (raw JSON value).
func dpEngine(t *testing.T, dpSize string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(http.ResponseWriter, *http.Request) {})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"data":[{"id":"m","owned_by":"sglang"}]}`))
	})
	mux.HandleFunc("GET /server_info", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(`{"dp_size":` + dpSize + `,"tp_size":1}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func readyURLs(store interface{ List() []*worker.Live }) []string {
	var out []string
	for _, l := range store.List() {
		if l.Status() == worker.StatusReady {
			out = append(out, l.URL)
		}
	}
	sort.Strings(out)
	return out
}

// --dp-aware (smg-spec.md §3.2 steps 5-6): an HTTP SGLang worker reporting dp_size 3 becomes
// three ready workers "{url}@0..2" with their rank and size; rank 0 keeps the id the
// registration answered; the URL cannot be registered again; removing any rank removes
// the whole registration.
func TestDPAwareExpandsOneWorkerPerRank(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.DPAware = true
	s, store := newService(t, cfg)
	srv := dpEngine(t, "3")
	acc, err := s.Register(context.Background(), registry.Spec{URL: srv.URL, WorkerType: "decode"})
	require.NoError(t, err)
	want := []string{srv.URL + "@0", srv.URL + "@1", srv.URL + "@2"}
	require.Eventually(t, func() bool { return len(readyURLs(store)) == 3 }, waitFor, tick)
	assert.Equal(t, want, readyURLs(store))
	ids := map[string]bool{}
	for _, l := range store.List() {
		require.NotNil(t, l.DPRank)
		require.NotNil(t, l.DPSize)
		assert.Equal(t, 3, *l.DPSize)
		assert.Equal(t, srv.URL, l.BaseURL(), "legs go to the base URL")
		assert.Equal(t, "3", l.Labels[wire.LabelDPSize])
		if *l.DPRank == 0 {
			assert.Equal(t, acc.WorkerID, l.ID, "rank 0 keeps the registration's id")
		}
		ids[l.ID] = true
	}
	assert.Len(t, ids, 3, "each rank is its own worker")

	_, err = s.Register(context.Background(), registry.Spec{URL: srv.URL, WorkerType: "decode"})
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, wire.CodeWorkerAlreadyExists, e.Code)
	assert.Contains(t, e.Message, acc.WorkerID)

	var rank2 string
	for _, l := range store.List() {
		if *l.DPRank == 2 {
			rank2 = l.ID
		}
	}
	require.NoError(t, s.Remove(context.Background(), rank2))
	assert.Empty(t, store.List(), "removing one rank removes every rank of the registration")
}

// Without --dp-aware, or for a dp_size that is not a positive integer, one worker is
// registered as before (the bad value as a single rank).
func TestDPAwareOffOrBadSizeKeepsOneWorker(t *testing.T) {
	t.Parallel()
	s, store := newService(t, testConfig())
	srv := dpEngine(t, "4")
	readyWorker(t, s, registry.Spec{URL: srv.URL, WorkerType: "prefill"})
	assert.Equal(t, []string{srv.URL}, readyURLs(store))
	assert.Nil(t, store.List()[0].DPRank)

	cfg := testConfig()
	cfg.DPAware = true
	s2, store2 := newService(t, cfg)
	bad := dpEngine(t, `"two"`)
	_, err := s2.Register(context.Background(), registry.Spec{URL: bad.URL, WorkerType: "prefill"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(readyURLs(store2)) == 1 }, waitFor, tick)
	assert.Equal(t, []string{bad.URL + "@0"}, readyURLs(store2))
}
