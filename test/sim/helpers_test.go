package sim_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/smg-go/smg/test/sim"
	"github.com/smg-go/smg/test/sim/kvevents"
)

// testTransport is shared by every test request so TestMain can close its idle connections
// before checking for leaked goroutines.
var testTransport = &http.Transport{MaxIdleConns: 4096, MaxIdleConnsPerHost: 2048, DisableCompression: true}

var client = &http.Client{Transport: testTransport}

// hangGuard bounds every test request; it is a hang guard, not a timing assertion.
const hangGuard = 20 * time.Second

func TestMain(m *testing.M) {
	code := m.Run()
	testTransport.CloseIdleConnections()
	if code == 0 {
		if err := goleak.Find(goleak.IgnoreAnyFunction(kvevents.LeakedGoroutine)); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// start runs a simulator with cfg and closes it when the test ends.
func start(t testing.TB, cfg sim.Config) *sim.Server {
	t.Helper()
	s, err := sim.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

func cfgOf(engine, role string, mods ...func(*sim.Config)) sim.Config {
	c := sim.DefaultConfig()
	c.Engine, c.Role = engine, role
	c.HandoffTimeout = 3 * time.Second
	for _, m := range mods {
		m(&c)
	}
	return c
}

func shortTimeout(c *sim.Config) { c.HandoffTimeout = 300 * time.Millisecond }

// pair starts a prefill and a decode of the same engine.
func pair(t testing.TB, engine string, mods ...func(*sim.Config)) (p, d *sim.Server) {
	return start(t, cfgOf(engine, sim.RolePrefill, mods...)), start(t, cfgOf(engine, sim.RoleDecode, mods...))
}

type result struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func (r result) json(t testing.TB) map[string]any {
	t.Helper()
	require.NoError(t, r.err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(r.body, &m), "body: %s", r.body)
	return m
}

// do sends one request (body marshalled to JSON unless []byte) and reads the whole answer.
func do(ctx context.Context, method, url string, body any, hdr ...string) result {
	var rd io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			b, _ = json.Marshal(body)
		}
		rd = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(ctx, hangGuard)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, rd)
	if err != nil {
		return result{err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return result{err: err}
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return result{status: resp.StatusCode, header: resp.Header, body: b, err: err}
}

func post(url string, body any, hdr ...string) result {
	return do(context.Background(), http.MethodPost, url, body, hdr...)
}

func get(url string) result { return do(context.Background(), http.MethodGet, url, nil) }

// both posts prefillBody to p and decodeBody to d concurrently (parallel dispatch).
func both(pURL string, prefillBody any, dURL string, decodeBody any) (pr, dr result) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); pr = post(pURL, prefillBody) }()
	go func() { defer wg.Done(); dr = post(dURL, decodeBody) }()
	wg.Wait()
	return pr, dr
}

// sglangBody is a SGLang PD body pointing at prefill p with the given room.
func sglangBody(p *sim.Server, room any, fields map[string]any) map[string]any {
	b := map[string]any{"bootstrap_host": "127.0.0.1", "bootstrap_port": p.BootstrapPort(), "bootstrap_room": room}
	for k, v := range fields {
		b[k] = v
	}
	return b
}

// sseData returns the data payloads of an SSE body, in order.
func sseData(t testing.TB, body []byte) []string {
	t.Helper()
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			out = append(out, d)
		}
	}
	return out
}

// eventually polls cond until it holds or the hang guard passes.
func eventually(t testing.TB, cond func() bool, msg string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition never held: %s", msg)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func errMessage(t testing.TB, r result) string {
	t.Helper()
	m := r.json(t)
	if e, ok := m["error"].(map[string]any); ok {
		return e["message"].(string)
	}
	d, ok := m["detail"].(string)
	require.True(t, ok, "no error message in %s", r.body)
	return d
}
