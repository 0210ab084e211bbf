package registry_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/worker"
)

func TestParseWorkersFile(t *testing.T) {
	t.Parallel()
	yamlList := `
- url: http://10.0.0.1:8000/
  worker_type: prefill
  kv_connector: NixlConnector
  labels: {zone: a, kv_engine_id: e1}
- {url: "http://10.0.0.2:8000", worker_type: decode, health: {drain_settle_secs: 0}}
`
	specs, err := registry.ParseWorkersFile([]byte(yamlList))
	require.NoError(t, err)
	require.Len(t, specs, 2)
	w, err := specs[0].Build()
	require.NoError(t, err)
	assert.Equal(t, "http://10.0.0.1:8000", w.URL)
	assert.Equal(t, worker.RolePrefill, w.Role)
	assert.Equal(t, "NixlConnector", w.KVConnector)
	assert.Equal(t, "e1", w.KVEngineID, "labels fill the dedicated fields as in a POST body")
	assert.Equal(t, map[string]string{"zone": "a"}, w.Labels)
	w, _ = specs[1].Build()
	require.NotNil(t, w.Health.DrainSettle)

	specs, err = registry.ParseWorkersFile([]byte(`{"workers": [{"url": "http://10.0.0.3:8000", "bootstrap_port": 8998, "worker_type": "prefill"}]}`))
	require.NoError(t, err)
	require.Len(t, specs, 1)
	require.NotNil(t, specs[0].BootstrapPort)
	assert.Equal(t, 8998, *specs[0].BootstrapPort)

	specs, err = registry.ParseWorkersFile(nil)
	require.NoError(t, err)
	assert.Empty(t, specs, "an empty file declares no workers")

	for _, c := range []struct{ name, doc, want string }{
		{"not a list", `url: http://x:1`, `expected a list of workers`},
		{"bad entry", "- url: http://10.0.0.1:1\n- url: ftp://x\n", "entry 1: Invalid value for field 'worker_url'"},
		{"bad type", `[{"url": "http://10.0.0.1:1", "bootstrap_port": "x"}]`, "entry 0: Invalid JSON body: field 'bootstrap_port'"},
		{"same url twice", "- url: http://10.0.0.1:1\n- url: http://10.0.0.1:1/\n", "entry 1: url http://10.0.0.1:1 is already entry 0"},
		{"not yaml", "- [", "not YAML or JSON"},
	} {
		_, err := registry.ParseWorkersFile([]byte(c.doc))
		require.Error(t, err, c.name)
		assert.Contains(t, err.Error(), c.want, c.name)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path)) // atomic, as a ConfigMap update
}

func TestWorkersFileRegistersAtStartupAndFollowsEdits(t *testing.T) {
	t.Parallel()
	e1 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	e2 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	e3 := (&engine{ownedBy: "vllm", model: "m", version: true}).start(t)
	path := filepath.Join(t.TempDir(), "workers.yaml")
	writeFile(t, path, `
- {url: "`+e1.URL+`", worker_type: prefill, kv_connector: NixlConnector, labels: {zone: a}}
- {url: "`+e2.URL+`", worker_type: decode, kv_connector: NixlConnector}
`)
	cfg := testConfig()
	cfg.WorkersFile = path
	s, store := newService(t, cfg)
	require.NoError(t, s.RegisterStartup(context.Background()))
	ws := store.List()
	require.Len(t, ws, 2, "registered before RegisterStartup returns")
	assert.Equal(t, worker.RolePrefill, ws[0].Role)
	assert.Equal(t, "NixlConnector", ws[0].KVConnector)
	assert.Equal(t, "a", ws[0].Labels["zone"])
	assert.Equal(t, worker.RoleDecode, ws[1].Role)
	require.Eventually(t, func() bool {
		for _, l := range store.List() {
			if !l.Healthy() || l.Runtime != worker.RuntimeVLLM {
				return false
			}
		}
		return true
	}, waitFor, tick, "activated like any registration")
	decodeID := ws[1].ID

	// Edit: e1's labels change, e2 is gone, e3 is new. Picked up by polling.
	writeFile(t, path, `
- {url: "`+e1.URL+`", worker_type: prefill, kv_connector: NixlConnector, labels: {zone: b}}
- {url: "`+e3.URL+`", worker_type: decode, kv_connector: NixlConnector, kv_engine_id: d3}
`)
	require.Eventually(t, func() bool {
		ws := store.List()
		if len(ws) != 2 {
			return false
		}
		p, err := store.GetByURL(e1.URL)
		d, err2 := store.GetByURL(e3.URL)
		return err == nil && err2 == nil && p.Labels["zone"] == "b" && d.KVEngineID == "d3"
	}, waitFor, tick, "the edited file applied")
	_, err := store.Get(decodeID)
	assert.Error(t, err, "the entry removed from the file is removed from the registry")

	// A broken file changes nothing.
	writeFile(t, path, "- url: ftp://nope\n")
	require.Error(t, s.ReloadWorkersFile(context.Background()))
	assert.Len(t, store.List(), 2)
	// An emptied file removes every worker it declared.
	writeFile(t, path, "[]\n")
	require.NoError(t, s.ReloadWorkersFile(context.Background()))
	assert.Empty(t, store.List())
}

func TestWorkersFileInvalidAtStartupIsAnError(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "workers.json")
	writeFile(t, path, `[{"url": "http://127.0.0.1:1", "worker_type": "sideways"}]`)
	cfg := testConfig()
	cfg.WorkersFile = path
	s, _ := newService(t, cfg)
	err := s.RegisterStartup(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--workers-file")
	assert.Contains(t, err.Error(), "entry 0")

	cfg.WorkersFile = filepath.Join(t.TempDir(), "missing.yaml")
	s2, _ := newService(t, cfg)
	require.ErrorContains(t, s2.RegisterStartup(context.Background()), "--workers-file")
}
