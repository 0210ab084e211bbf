package deploy_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/smg-go/smg/adapters/discovery/kubernetes/k8stest"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// Bounds of the flow's waits (hang guards, not timing assertions).
const (
	listenTimeout = 30 * time.Second // process start to "smg listening"
	settleTimeout = 20 * time.Second // a registration or file change seen everywhere, healthy
	stopTimeout   = 15 * time.Second // SIGTERM to exit (drain delay 5 s), before SIGKILL
)

// readmeFlow is the README's "vLLM over HTTP" example: the launch flags and the admin calls.
type readmeFlow struct {
	launch []string // the flags after `bin/smg launch`
	calls  []readmeCall
}

type readmeCall struct {
	method, path string
	body         map[string]any
}

// readVLLMFlow reads the README block that starts with "# vLLM over HTTP: start without
// workers" and ends at the first blank line: one `bin/smg launch` line, then curl calls
// whose -d bodies are JSON.
func readVLLMFlow(t *testing.T) readmeFlow {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	_, block, ok := strings.Cut(string(b), "# vLLM over HTTP: start without workers")
	require.True(t, ok, "README has no vLLM over HTTP flow")
	block, _, _ = strings.Cut(block, "\n\n")
	var f readmeFlow
	curl := regexp.MustCompile(`curl -X (\w+) http://localhost:\d+(/\S+)`)
	body := regexp.MustCompile(`(?s)-d '(\{.*?\})'`)
	for _, cmd := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n")[1:] {
		cmd = strings.TrimSpace(cmd)
		if rest, ok := strings.CutPrefix(cmd, "bin/smg launch "); ok {
			f.launch = strings.Fields(rest)
			continue
		}
		m := curl.FindStringSubmatch(cmd)
		require.NotNil(t, m, "README vLLM flow line %q", cmd)
		c := readmeCall{method: m[1], path: m[2]}
		d := body.FindStringSubmatch(cmd)
		require.NotNil(t, d, "README vLLM flow line %q has no -d body", cmd)
		require.NoError(t, json.Unmarshal([]byte(d[1]), &c.body), d[1])
		f.calls = append(f.calls, c)
	}
	require.NotEmpty(t, f.launch)
	require.NotEmpty(t, f.calls)
	return f
}

// gatewayProc is one `smg` process started as the rendered Deployment's container.
type gatewayProc struct {
	*fleet.Gateway
	name string
	out  *procLog
}

// procLog collects a process's output and reports the address of its "smg listening" line.
type procLog struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	addr chan string
	seen bool
}

func (l *procLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	for _, line := range strings.Split(l.buf.String(), "\n") {
		var rec struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if !l.seen && json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == "smg listening" && rec.Addr != "" {
			l.seen = true
			l.addr <- rec.Addr
		}
	}
	return len(p), nil
}

func (l *procLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// podCommand is the rendered container's args and env made runnable on loopback: the listen
// address 127.0.0.1, ports 0 (free), the workers file in dir, the test's Redis and key
// prefix. Everything else is kept as rendered. An env value from a Secret or another source
// fails the test (the default values have none).
func podCommand(t *testing.T, c corev1.Container, dir, redisURL, prefix string) (args, env []string) {
	t.Helper()
	for _, a := range c.Args {
		name, _, _ := strings.Cut(a, "=")
		switch name {
		case "--host":
			a = "--host=127.0.0.1"
		case "--port", "--prometheus-port":
			a = name + "=0"
		case "--workers-file":
			a = "--workers-file=" + filepath.Join(dir, filepath.Base(a))
		case "--redis-key-prefix":
			a = "--redis-key-prefix=" + prefix
		}
		args = append(args, a)
	}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SMG_") {
			env = append(env, kv)
		}
	}
	for _, e := range c.Env {
		require.Nil(t, e.ValueFrom, "env %s comes from elsewhere", e.Name)
		v := e.Value
		if e.Name == "SMG_REDIS_URL" {
			v = redisURL
		}
		env = append(env, e.Name+"="+v)
	}
	return args, env
}

// startProc starts bin with args and env and returns once it listens; SIGTERM at cleanup.
func startProc(t *testing.T, name, bin string, args, env []string) *gatewayProc {
	t.Helper()
	out := &procLog{addr: make(chan string, 1)}
	cmd := exec.Command(bin, args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = env, out, out
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	var werr error
	go func() { werr = cmd.Wait(); close(done) }()
	client := &http.Client{Timeout: 30 * time.Second}
	t.Cleanup(func() {
		client.CloseIdleConnections()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(stopTimeout):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			s := out.String()
			if len(s) > 4000 {
				s = s[len(s)-4000:]
			}
			t.Logf("%s output:\n%s", name, s)
		}
	})
	select {
	case addr := <-out.addr:
		return &gatewayProc{Gateway: &fleet.Gateway{URL: "http://" + addr, Client: client}, name: name, out: out}
	case <-done:
		t.Fatalf("%s exited: %v\n%s", name, werr, out.String())
	case <-time.After(listenTimeout):
		t.Fatalf("%s did not listen within %s:\n%s", name, listenTimeout, out.String())
	}
	return nil
}

// writeAtomic replaces path's content as the kubelet updates a ConfigMap volume: never a
// half-written file.
func writeAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	require.NoError(t, os.WriteFile(tmp, []byte(content), 0o600))
	require.NoError(t, os.Rename(tmp, path))
}

// The README's vLLM flow on a fresh cluster, through the chart: the chart (default values,
// a Redis, then one workers-file entry) is rendered and applied to a real kube-apiserver;
// two replicas run exactly as its Deployment says (loopback, the test's Redis and key
// prefix); both are Ready while empty (so `helm install --wait` completes); the README's
// POST /workers calls go to one replica, as the admin Service routes them; every replica
// lists the registration through Redis, becomes Ready and serves a request with a KV
// handoff; then the workers-file entry, written as a ConfigMap update, reaches both.
func TestChartReadmeVLLMFlowReachesEveryReplica(t *testing.T) {
	bin := helm(t)
	flow := readVLLMFlow(t)
	empty := renderChart(t, bin, withRedis)
	filled := renderChart(t, bin, withRedis+oneWorker)
	applyAll(t, k8stest.Start(t), filled)
	redisURL := redistest.URL(t)
	_, prefix := redistest.Client(t) // its keys are deleted when the test ends

	dep := typed[appsv1.Deployment](t, empty, "Deployment/smg")
	require.Equal(t, dep, typed[appsv1.Deployment](t, filled, "Deployment/smg"),
		"declaring a worker changes only the ConfigMap: no rollout, the file is re-read")
	require.Len(t, dep.Spec.Template.Spec.Containers, 1)
	c := dep.Spec.Template.Spec.Containers[0]
	require.NotEmpty(t, c.Args)
	require.Equal(t, "launch", c.Args[0])
	for i := 0; i < len(flow.launch); i++ {
		f := flow.launch[i]
		if i+1 < len(flow.launch) && !strings.HasPrefix(flow.launch[i+1], "--") {
			f += "=" + flow.launch[i+1]
			i++
		}
		assert.Contains(t, c.Args, f, "the README's launch flag %s is in the chart's args", f)
	}
	require.Equal(t, int32(2), *dep.Spec.Replicas, "the default replica count")

	// The mounted workers file, as the kubelet writes the empty ConfigMap.
	dir := t.TempDir()
	file, _ := arg(c.Args, "--workers-file")
	key := filepath.Base(file)
	writeAtomic(t, filepath.Join(dir, key), typed[corev1.ConfigMap](t, empty, "ConfigMap/smg-workers").Data[key])

	smgBin, cleanup, err := fleet.BuildSMG()
	require.NoError(t, err)
	t.Cleanup(cleanup)
	args, env := podCommand(t, c, dir, redisURL, prefix)
	var replicas []*gatewayProc
	for _, name := range []string{"smg-0", "smg-1"} {
		replicas = append(replicas, startProc(t, name, smgBin, args, env))
	}

	// An empty replica is Ready: the kubelet's probe (GET /readiness on the http port) passes.
	for _, g := range replicas {
		r := g.Get(t, "/readiness")
		assert.Equal(t, http.StatusOK, r.Status, "%s empty: %s", g.name, r.Body)
		assert.JSONEq(t, `{"status":"ready","healthy_workers":0,"total_workers":0}`, string(r.Body), g.name)
	}

	// Ready and empty, its data plane answers the seed's 503, not a refused connection.
	chat := map[string]any{"model": "sim-model", "max_tokens": 3,
		"messages": []map[string]any{{"role": "user", "content": "day one"}}}
	r := replicas[1].Post(t, "/v1/chat/completions", chat, nil)
	assert.Equal(t, http.StatusServiceUnavailable, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "no_available_workers")

	// The README's calls go to the admin Service: every replica, Ready or not, on the port
	// named http, which is the gateway's --port (each process's listener here). It picks
	// one replica; simulated vLLM engines stand in for prefill-0 and decode-0.
	admin := typed[corev1.Service](t, filled, "Service/smg-admin")
	require.True(t, admin.Spec.PublishNotReadyAddresses)
	require.Len(t, admin.Spec.Ports, 1)
	require.Equal(t, "http", admin.Spec.Ports[0].TargetPort.String())
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == "http" })
	require.GreaterOrEqual(t, i, 0, "the container has a port named http")
	require.Contains(t, c.Args, "--port="+strconv.Itoa(int(c.Ports[i].ContainerPort)), "the admin Service's target port is the gateway's --port")
	sims := map[string]*sim.Server{
		"prefill": fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RolePrefill}),
		"decode":  fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode}),
	}
	want := map[string]string{} // url -> worker_type
	for _, call := range flow.calls {
		require.Equal(t, http.MethodPost, call.method)
		require.Equal(t, "/workers", call.path)
		role, _ := call.body["worker_type"].(string)
		s, ok := sims[role]
		require.True(t, ok, "README body %v", call.body)
		call.body["url"] = s.URL()
		want[s.URL()] = role
		r := replicas[0].Post(t, call.path, call.body, nil)
		require.Equal(t, http.StatusAccepted, r.Status, "POST /workers %v: %s", call.body, r.Body)
	}

	// Every replica lists both legs (through Redis), healthy, and is Ready.
	for _, g := range replicas {
		waitWorkers(t, g, want)
		r := g.Get(t, "/readiness")
		assert.Equal(t, http.StatusOK, r.Status, "%s: %s", g.name, r.Body)
		assert.JSONEq(t, `{"status":"ready","healthy_workers":2,"total_workers":2}`, string(r.Body), g.name)
	}
	// The other replica serves with the registered pair, a real NIXL handoff.
	r = replicas[1].Post(t, "/v1/chat/completions", chat, nil)
	require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)
	require.Eventually(t, func() bool { return sims["decode"].Stats().HandoffsReceived == 1 }, settleTimeout, 20*time.Millisecond)
	assert.Zero(t, sims["decode"].Stats().RecomputedPrompts, "the decode got the prefill's KV")

	// The workers-file entry, as a ConfigMap update (helm upgrade with the entry), reaches
	// both running replicas.
	dec1 := fleet.StartSim(t, sim.Config{Engine: sim.EngineVLLM, Role: sim.RoleDecode})
	data := typed[corev1.ConfigMap](t, filled, "ConfigMap/smg-workers").Data[key]
	require.Contains(t, data, "http://vllm-decode-1.inference:8000")
	writeAtomic(t, filepath.Join(dir, key), strings.ReplaceAll(data, "http://vllm-decode-1.inference:8000", dec1.URL()))
	want[dec1.URL()] = "decode"
	for _, g := range replicas {
		waitWorkers(t, g, want)
	}
}

// waitWorkers waits (at most settleTimeout) until g lists exactly the workers of want (url
// -> worker_type), all healthy with the README's NixlConnector.
func waitWorkers(t *testing.T, g *gatewayProc, want map[string]string) {
	t.Helper()
	var last []fleet.WorkerInfo
	ok := assert.Eventually(t, func() bool {
		last = listWorkers(g)
		if len(last) != len(want) {
			return false
		}
		for _, w := range last {
			if want[w.URL] != w.WorkerType || !w.IsHealthy || w.KVConnector != "NixlConnector" {
				return false
			}
		}
		return true
	}, settleTimeout, 50*time.Millisecond)
	require.True(t, ok, "%s lists %+v, want %v", g.name, last, want)
}

// listWorkers is GET /workers, nil on any failure (safe in an Eventually condition).
func listWorkers(g *gatewayProc) []fleet.WorkerInfo {
	req, err := http.NewRequest(http.MethodGet, g.URL+"/workers", nil)
	if err != nil {
		return nil
	}
	r, err := g.Do(req)
	if err != nil || r.Status != http.StatusOK {
		return nil
	}
	var l struct {
		Workers []fleet.WorkerInfo `json:"workers"`
	}
	if json.Unmarshal(r.Body, &l) != nil {
		return nil
	}
	return l.Workers
}
