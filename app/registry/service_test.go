package registry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/app/registry"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const waitFor, tick = 5 * time.Second, 5 * time.Millisecond

// engine describes a fake loopback engine: which metadata routes it answers and how.
type engine struct {
	ownedBy       string // /v1/models owned_by; "" = no /v1/models
	model         string
	version       bool // answers GET /version (vLLM)
	serverInfo    bool // answers GET /server_info (SGLang)
	getServerInfo bool // answers GET /get_server_info (SGLang, older route)
	maxRunning    int
	down          atomic.Bool // /health answers 503
}

func (e *engine) start(t testing.TB) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) {
		if e.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	if e.ownedBy != "" {
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{
				{"id": e.model, "object": "model", "owned_by": e.ownedBy, "root": "/models/" + e.model, "max_model_len": 32768},
			}})
		})
	}
	if e.version {
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(`{"version":"0.11.0"}`))
		})
	}
	info := func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{"version": "0.5.3", "max_running_requests": e.maxRunning,
			"tp_size": 1, "disaggregation_transfer_backend": "mooncake", "page_size": 1, "skip_tokenizer_init": false,
			"json_model_override_args": "{}", "some_list": []int{1}})
	}
	if e.serverInfo {
		mux.HandleFunc("GET /server_info", info)
	}
	if e.getServerInfo {
		mux.HandleFunc("GET /get_server_info", info)
	}
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func testConfig() config.Config {
	cfg := config.Default()
	cfg.HealthCheckInterval = 20 * time.Millisecond
	cfg.HealthCheckTimeout = time.Second
	cfg.DrainSettle = 0
	return cfg
}

func newService(t *testing.T, cfg config.Config) (*registry.Service, *memory.Workers) {
	t.Helper()
	store := memory.NewWorkers()
	s := registry.New(store, cfg, nil, slog.New(slog.DiscardHandler))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		require.NoError(t, s.Close(ctx))
	})
	return s, store
}

// readyWorker registers spec and waits until the worker registered under the returned id is
// ready.
func readyWorker(t *testing.T, s *registry.Service, spec registry.Spec) *worker.Live {
	t.Helper()
	acc, err := s.Register(context.Background(), spec)
	require.NoError(t, err)
	var l *worker.Live
	require.Eventually(t, func() bool {
		l, err = s.Get(acc.WorkerID)
		return err == nil && l.Healthy()
	}, waitFor, tick)
	return l
}

func TestRegisterDetectsRuntimeModelsAndLabels(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		engine      *engine
		spec        registry.Spec
		wantRuntime worker.Runtime
		wantModels  []string
		wantLabels  map[string]string
	}{
		{
			name:        "owned_by sglang; max_running_requests from /get_server_info when /server_info is absent",
			engine:      &engine{ownedBy: "sglang", model: "sim-model", getServerInfo: true, maxRunning: 48},
			spec:        registry.Spec{WorkerType: "prefill"},
			wantRuntime: worker.RuntimeSGLang,
			wantModels:  []string{"sim-model"},
			wantLabels: map[string]string{"max_running_requests": "48", "version": "0.5.3", "tp_size": "1",
				"disaggregation_transfer_backend": "mooncake", "page_size": "1"},
		},
		{
			name:        "owned_by vllm; model and version labels",
			engine:      &engine{ownedBy: "vllm", model: "m-v", version: true},
			spec:        registry.Spec{WorkerType: "decode", KVConnector: "NixlConnector"},
			wantRuntime: worker.RuntimeVLLM,
			wantModels:  []string{"m-v"},
			wantLabels:  map[string]string{"served_model_name": "m-v", "model_path": "/models/m-v", "max_model_len": "32768", "version": "0.11.0"},
		},
		{
			name:        "unknown owned_by and /version answers: vllm",
			engine:      &engine{ownedBy: "someone", model: "m", version: true},
			wantRuntime: worker.RuntimeVLLM,
			wantModels:  []string{"m"},
			wantLabels:  map[string]string{"served_model_name": "m", "model_path": "/models/m", "max_model_len": "32768", "version": "0.11.0"},
		},
		{
			name:        "no /v1/models, /server_info answers: sglang",
			engine:      &engine{serverInfo: true, maxRunning: 7},
			wantRuntime: worker.RuntimeSGLang,
			wantLabels: map[string]string{"max_running_requests": "7", "version": "0.5.3", "tp_size": "1",
				"disaggregation_transfer_backend": "mooncake", "page_size": "1"},
		},
		{
			name:        "only /v1/models with an unknown owner: generic",
			engine:      &engine{ownedBy: "someone", model: "m"},
			wantRuntime: worker.RuntimeGeneric,
			wantModels:  []string{"m"},
		},
		{
			name:        "nothing but /health: sglang by default, wildcard models",
			engine:      &engine{},
			wantRuntime: worker.RuntimeSGLang,
		},
		{
			name:        "explicit runtime_type and models win; registered labels win",
			engine:      &engine{ownedBy: "sglang", model: "detected", serverInfo: true, maxRunning: 99},
			spec:        registry.Spec{RuntimeType: "vllm", Models: []registry.ModelCard{{ID: "given"}}, Labels: map[string]string{"version": "mine"}},
			wantRuntime: worker.RuntimeVLLM,
			wantModels:  []string{"given"},
			wantLabels:  map[string]string{"served_model_name": "detected", "model_path": "/models/detected", "max_model_len": "32768", "version": "mine"},
		},
		{
			name:        "a registered max_running_requests label is kept",
			engine:      &engine{ownedBy: "sglang", model: "m", serverInfo: true, maxRunning: 99},
			spec:        registry.Spec{Labels: map[string]string{"max_running_requests": "5"}},
			wantRuntime: worker.RuntimeSGLang,
			wantModels:  []string{"m"},
			wantLabels: map[string]string{"max_running_requests": "5", "version": "0.5.3", "tp_size": "1",
				"disaggregation_transfer_backend": "mooncake", "page_size": "1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := tc.engine.start(t)
			s, _ := newService(t, testConfig())
			spec := tc.spec
			spec.URL = srv.URL
			l := readyWorker(t, s, spec)
			assert.Equal(t, tc.wantRuntime, l.Runtime)
			assert.Equal(t, tc.wantModels, l.Models)
			assert.Equal(t, tc.wantLabels, l.Labels)
			assert.Equal(t, srv.URL, l.URL)
			if spec.KVConnector != "" {
				assert.Equal(t, spec.KVConnector, l.KVConnector)
			}
		})
	}
}

func TestRegisterSilentWorkerStaysPendingUntilItAnswers(t *testing.T) {
	t.Parallel()
	e := &engine{ownedBy: "vllm", model: "m", version: true}
	e.down.Store(true)
	srv := e.start(t)
	s, store := newService(t, testConfig())
	acc, err := s.Register(context.Background(), registry.Spec{URL: srv.URL, WorkerType: "decode"})
	require.NoError(t, err)
	assert.Equal(t, "/workers/"+acc.WorkerID, acc.Location)
	assert.Equal(t, srv.URL, acc.URL)
	_, err = uuid.Parse(acc.WorkerID)
	require.NoError(t, err)

	l, err := s.Get(acc.WorkerID)
	require.NoError(t, err)
	assert.Equal(t, worker.StatusPending, l.Status())
	assert.Len(t, store.ByRole(worker.RoleDecode), 1, "a pending worker is listed")
	time.Sleep(100 * time.Millisecond) // several activation attempts
	l, err = s.Get(acc.WorkerID)
	require.NoError(t, err)
	assert.Equal(t, worker.StatusPending, l.Status(), "not routable before its first successful probe")

	e.down.Store(false)
	require.Eventually(t, func() bool {
		l, err := s.Get(acc.WorkerID)
		return err == nil && l.Healthy() && l.Runtime == worker.RuntimeVLLM
	}, waitFor, tick)
}

func TestRegisterWithHealthChecksDisabledIsReadyWithoutProbing(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.DisableHealthCheck = true
	s, _ := newService(t, cfg)
	// Nothing listens on this URL (a closed server's address).
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	l := readyWorker(t, s, registry.Spec{URL: url, WorkerType: "prefill"})
	assert.Equal(t, worker.RuntimeSGLang, l.Runtime)

	g := readyWorker(t, s, registry.Spec{URL: "grpc://127.0.0.1:1", WorkerType: "decode"})
	assert.Equal(t, worker.RuntimeSGLang, g.Runtime)
}

func TestRegisterGRPCWorkerStaysPending(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, testConfig())
	acc, err := s.Register(context.Background(), registry.Spec{URL: "grpc://127.0.0.1:1", WorkerType: "prefill", BootstrapPort: ptr(8998)})
	require.NoError(t, err)
	l, err := s.Get(acc.WorkerID)
	require.NoError(t, err)
	assert.Equal(t, worker.StatusPending, l.Status())
	assert.Equal(t, worker.ConnGRPC, l.Mode)
	assert.Equal(t, 8998, *l.BootstrapPort)
}

func TestRegisterErrors(t *testing.T) {
	t.Parallel()
	srv := (&engine{}).start(t)
	s, _ := newService(t, testConfig())
	first, err := s.Register(context.Background(), registry.Spec{URL: srv.URL, WorkerType: "prefill"})
	require.NoError(t, err)

	tests := []struct {
		name   string
		spec   registry.Spec
		status int
		code   string
		msg    string
	}{
		{"duplicate URL", registry.Spec{URL: srv.URL, WorkerType: "decode"}, 409, "WORKER_ALREADY_EXISTS",
			"Worker already exists at URL '" + srv.URL + "' with ID " + first.WorkerID + ". Use DELETE /workers/" + first.WorkerID +
				", then POST again, to replace it."},
		{"duplicate URL with a trailing slash", registry.Spec{URL: srv.URL + "/"}, 409, "WORKER_ALREADY_EXISTS",
			"Worker already exists at URL '" + srv.URL + "' with ID " + first.WorkerID + ". Use DELETE /workers/" + first.WorkerID +
				", then POST again, to replace it."},
		{"malformed URL", registry.Spec{URL: "localhost:8000"}, 400, "BAD_REQUEST",
			"Invalid value for field 'worker_url': localhost:8000 - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme"},
		{"unknown worker_type", registry.Spec{URL: "http://127.0.0.1:9", WorkerType: "router"}, 400, "BAD_REQUEST",
			`Invalid value for field 'worker_type': unknown worker_type "router" (expected regular, prefill, decode or encode)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Register(context.Background(), tc.spec)
			e, ok := errs.As(err)
			require.True(t, ok, "want *errs.Error, got %v", err)
			assert.Equal(t, tc.status, e.Status)
			assert.Equal(t, tc.code, e.Code)
			assert.Equal(t, tc.msg, e.Message)
		})
	}
	assert.Len(t, s.List(), 1)
}

func TestGetAndRemoveErrors(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, testConfig())
	unknown := uuid.NewString()
	tests := []struct {
		name   string
		id     string
		status int
		code   string
		msg    string
	}{
		{"unknown id", unknown, 404, "WORKER_NOT_FOUND", "Worker " + unknown + " not found"},
		{"not a UUID", "abc", 400, "BAD_REQUEST", "Invalid worker_id 'abc' (expected UUID). Error: invalid UUID length: 3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, err := range []error{func() error { _, err := s.Get(tc.id); return err }(), s.Remove(context.Background(), tc.id)} {
				e, ok := errs.As(err)
				require.True(t, ok, "want *errs.Error, got %v", err)
				assert.Equal(t, tc.status, e.Status)
				assert.Equal(t, tc.code, e.Code)
				assert.Equal(t, tc.msg, e.Message)
			}
		})
	}
}

func TestRemoveDrainsReadyWorkersThenRemoves(t *testing.T) {
	t.Parallel()
	srv := (&engine{ownedBy: "sglang", model: "m"}).start(t)
	cfg := testConfig()
	cfg.DrainSettle = 50 * time.Millisecond
	s, store := newService(t, cfg)
	var mu sync.Mutex
	var kinds []string
	l := readyWorker(t, s, registry.Spec{URL: srv.URL, WorkerType: "decode"})
	store.Subscribe(func(ev ports.WorkerEvent) {
		mu.Lock()
		defer mu.Unlock()
		kinds = append(kinds, ev.Kind+":"+string(ev.Worker.Status()))
	})

	require.NoError(t, s.Remove(context.Background(), l.ID))
	assert.Equal(t, worker.StatusDraining, l.Status())
	assert.False(t, l.Available(), "draining is not routable")
	_, err := s.Get(l.ID)
	require.NoError(t, err, "still listed while draining")
	// A second POST of the same URL is refused while it drains.
	_, err = s.Register(context.Background(), registry.Spec{URL: srv.URL})
	e, _ := errs.As(err)
	require.NotNil(t, e)
	assert.Equal(t, 409, e.Status)

	require.Eventually(t, func() bool { _, err := store.Get(l.ID); return err != nil }, waitFor, tick)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"status:draining", "removed:draining"}, kinds)
}

func TestRemoveIsImmediateWithoutSettleOrForPendingWorkers(t *testing.T) {
	t.Parallel()
	e := &engine{}
	e.down.Store(true)
	srv := e.start(t)
	cfg := testConfig()
	cfg.DrainSettle = time.Hour
	s, store := newService(t, cfg)

	pending, err := s.Register(context.Background(), registry.Spec{URL: srv.URL})
	require.NoError(t, err)
	require.NoError(t, s.Remove(context.Background(), pending.WorkerID))
	_, err = store.Get(pending.WorkerID)
	assert.ErrorIs(t, err, ports.ErrNotFound, "a pending worker is removed at once")

	up := (&engine{}).start(t)
	l := readyWorker(t, s, registry.Spec{URL: up.URL, Health: &registry.HealthSpec{DrainSettleSecs: ptr(0)}})
	require.NoError(t, s.Remove(context.Background(), l.ID))
	_, err = store.Get(l.ID)
	assert.ErrorIs(t, err, ports.ErrNotFound, "health.drain_settle_secs 0 removes at once")
}

func TestRegisterStartup(t *testing.T) {
	t.Parallel()
	p := (&engine{ownedBy: "sglang", model: "m"}).start(t)
	d := (&engine{ownedBy: "sglang", model: "m"}).start(t)
	cfg := testConfig()
	cfg.PDDisaggregation = true
	cfg.Prefill = []config.PrefillSpec{{URL: p.URL, BootstrapPort: ptr(8998)}, {URL: p.URL}}
	cfg.Decode = []string{d.URL}
	s, store := newService(t, cfg)
	require.NoError(t, s.RegisterStartup(context.Background()))

	require.Eventually(t, func() bool {
		ps, ds := store.ByRole(worker.RolePrefill), store.ByRole(worker.RoleDecode)
		return len(ps) == 1 && len(ds) == 1 && ps[0].Healthy() && ds[0].Healthy()
	}, waitFor, tick)
	pw := store.ByRole(worker.RolePrefill)[0]
	require.NotNil(t, pw.BootstrapPort)
	assert.Equal(t, 8998, *pw.BootstrapPort)
	assert.Nil(t, store.ByRole(worker.RoleDecode)[0].BootstrapPort)

	bad := testConfig()
	bad.Decode = []string{"decode-0:8000"}
	s2, _ := newService(t, bad)
	err := s2.RegisterStartup(context.Background())
	require.Error(t, err)
	assert.Equal(t, "invalid value for --decode decode-0:8000: Invalid value for field 'worker_url': decode-0:8000 - URL must start with a lowercase http://, https://, grpc://, grpcs://, or ipc:// scheme", err.Error())
}

func TestPairingKeyInjection(t *testing.T) {
	t.Parallel()
	s, _ := newService(t, testConfig())
	w := worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"}
	assert.Equal(t, registry.PairingKeyPlaceholder, s.PairingKey(w))
	s.SetPairingKey(func(w worker.Worker) string { return string(w.Runtime) + "/" + w.KVConnector })
	assert.Equal(t, "vllm/NixlConnector", s.PairingKey(w))
	s.SetPairingKey(nil)
	assert.Equal(t, "unknown", s.PairingKey(w))
}

func TestRegisterAfterCloseFails(t *testing.T) {
	t.Parallel()
	s := registry.New(memory.NewWorkers(), testConfig(), nil, nil)
	require.NoError(t, s.Close(context.Background()))
	_, err := s.Register(context.Background(), registry.Spec{URL: "http://127.0.0.1:9"})
	e, ok := errs.As(err)
	require.True(t, ok)
	assert.Equal(t, 500, e.Status)
	assert.Equal(t, "INTERNAL_SERVER_ERROR", e.Code)
}

func TestModuleRegistersStartupWorkersOnStart(t *testing.T) {
	t.Parallel()
	d := (&engine{ownedBy: "sglang", model: "m"}).start(t)
	cfg := testConfig()
	cfg.Decode = []string{d.URL}
	var store ports.WorkerStore
	app := fxtest.New(t, fx.NopLogger, memory.Module(), fx.Supply(cfg), registry.Module(), fx.Populate(&store))
	app.RequireStart()
	require.Len(t, store.List(), 1, "startup workers are in the store when start returns")
	require.Eventually(t, func() bool { return store.List()[0].Healthy() }, waitFor, tick)
	app.RequireStop()
}

func TestRegistrationLimits(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.MaxWorkers = 2
	s, _ := newService(t, cfg)
	for _, u := range []string{"http://169.254.169.254", "http://[fd00:ec2::254]:80", "http://[fe80::1%25eth0]:8000"} {
		_, err := s.Register(context.Background(), registry.Spec{URL: u})
		e, ok := errs.As(err)
		require.True(t, ok, "%s: %v", u, err)
		assert.Equal(t, http.StatusBadRequest, e.Status, u)
		assert.Equal(t, "BAD_REQUEST", e.Code, u)
	}
	_, err := s.Register(context.Background(), registry.Spec{URL: "http://127.0.0.1:1"})
	require.NoError(t, err)
	_, err = s.Register(context.Background(), registry.Spec{URL: "http://127.0.0.1:2"})
	require.NoError(t, err)
	_, err = s.Register(context.Background(), registry.Spec{URL: "http://127.0.0.1:3"})
	e, ok := errs.As(err)
	require.True(t, ok, "%v", err)
	assert.Equal(t, http.StatusConflict, e.Status)
	assert.Equal(t, registry.CodeWorkerLimitReached, e.Code)
}

func TestRegistrationProbesAreBounded(t *testing.T) {
	t.Parallel()
	var inFlight, peak, total atomic.Int64
	release := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		total.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	defer close(release)
	cfg := testConfig()
	cfg.RegistrationProbes = 3
	cfg.HealthCheckTimeout = 5 * time.Second
	s, _ := newService(t, cfg)
	for i := 0; i < 20; i++ { // 20 workers on one engine: distinct URLs by DP suffix
		_, err := s.Register(context.Background(), registry.Spec{URL: fmt.Sprintf("%s@%d", srv.URL, i)})
		require.NoError(t, err)
	}
	require.Eventually(t, func() bool { return inFlight.Load() == 3 }, waitFor, tick, "probes never filled the slots")
	time.Sleep(100 * time.Millisecond) // give any unbounded prober time to show up
	assert.EqualValues(t, 3, peak.Load(), "probes in flight at once")
}

func TestStartupWorkersOnMetadataAddressesFailStartup(t *testing.T) {
	t.Parallel()
	cfg := testConfig()
	cfg.PDDisaggregation = true
	cfg.Prefill = []config.PrefillSpec{{URL: "http://169.254.169.254:8000"}}
	s, _ := newService(t, cfg)
	err := s.RegisterStartup(context.Background())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--prefill")
	assert.Contains(t, err.Error(), "--worker-allowed-hosts")
}
