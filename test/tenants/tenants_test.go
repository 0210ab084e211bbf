// Package tenants_test is the end-to-end suite of tenants and their budgets: in-process
// gateways (test/fleet) with a --tenants-file in front of simulated workers (test/sim),
// sharing a real Redis (or a 3-master Redis Cluster) the way replicas do.
package tenants_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/store"
	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/app"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

func bearer(key string) http.Header { return http.Header{"Authorization": {"Bearer " + key}} }

func writeTenants(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	return path
}

// startReplicas starts n gateways on one SGLang 1P+1D fleet with edit applied to each
// config, and waits (hang guard 15 s) until every one has both workers ready.
func startReplicas(t *testing.T, n int, edit func(*config.Config), extra ...fx.Option) []*fleet.Gateway {
	t.Helper()
	p := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RolePrefill, Host: "127.0.0.1"})
	d := fleet.StartSim(t, sim.Config{Engine: sim.EngineSGLang, Role: sim.RoleDecode, Host: "127.0.0.1"})
	var gs []*fleet.Gateway
	for range n {
		cfg := fleet.DefaultConfig()
		bp := p.BootstrapPort()
		cfg.Prefill = []config.PrefillSpec{{URL: p.URL(), BootstrapPort: &bp}}
		cfg.Decode = []string{d.URL()}
		edit(&cfg)
		g := fleet.StartGateway(t, cfg, extra...)
		g.WaitWorkersHealthy(t, 2)
		gs = append(gs, g)
	}
	return gs
}

// slowRedisOK raises the gateways' Redis call timeout from 100 ms to 10 s: on a loaded test
// machine a 100 ms call times out, and each replica falls back to its own budgets (the
// documented Redis-down behaviour, tested on its own), which is not what these tests
// measure.
var slowRedisOK = fx.Decorate(func(o store.SharedOptions) store.SharedOptions {
	o.OpTimeout = 10 * time.Second
	return o
})

func chat(maxTokens int) string {
	return fmt.Sprintf(`{"model":"sim-model","messages":[{"role":"user","content":"hello there"}],"max_tokens":%d}`, maxTokens)
}

type usage struct {
	Usage struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// Over its budget a tenant gets 429 tenant_rate_limited with Retry-After and the limit in
// the seed's error body; another tenant and the --api-key holder are not affected.
func TestOverBudgetIs429WithRetryAfter(t *testing.T) {
	t.Parallel()
	file := writeTenants(t, `
- name: small
  api_keys: [k-small]
  limits: {requests_per_minute: 2}
- name: big
  api_keys: [k-big]
`)
	g := startReplicas(t, 1, func(c *config.Config) { c.TenantsFile, c.APIKey = file, "gw-key" })[0]
	for i := range 2 {
		r := g.Post(t, "/v1/chat/completions", chat(4), bearer("k-small"))
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
	}
	r := g.Post(t, "/v1/chat/completions", chat(4), bearer("k-small"))
	require.Equal(t, http.StatusTooManyRequests, r.Status, "%s", r.Body)
	assert.Equal(t, "tenant_rate_limited", r.Header.Get("X-SMG-Error-Code"))
	ra, err := strconv.Atoi(r.Header.Get("Retry-After"))
	require.NoError(t, err, "Retry-After: %q", r.Header.Get("Retry-After"))
	assert.GreaterOrEqual(t, ra, 1)
	assert.LessOrEqual(t, ra, 30, "one request refills in 30 s at 2/min")
	assert.JSONEq(t, fmt.Sprintf(`{"error":{"type":"rate_limit_error","code":"tenant_rate_limited","param":null,
		"message":"tenant 'small' is over its requests_per_minute limit (2); retry after %d s"}}`, ra), string(r.Body))

	assert.Equal(t, http.StatusOK, g.Post(t, "/v1/chat/completions", chat(4), bearer("k-big")).Status, "another tenant")
	assert.Equal(t, http.StatusOK, g.Post(t, "/v1/chat/completions", chat(4), bearer("gw-key")).Status, "the --api-key holder")
	assert.Equal(t, http.StatusUnauthorized, g.Post(t, "/v1/chat/completions", chat(4), bearer("k-nobody")).Status)

	m := g.Metrics(t)
	assert.Equal(t, 2.0, m.Sum("smg_tenant_requests_total", "tenant", "small", "outcome", "admitted"))
	assert.Equal(t, 1.0, m.Sum("smg_tenant_requests_total", "tenant", "small", "outcome", "limited", "limit", "requests_per_minute"))
}

// Three replicas on one Redis (and on a 3-master Cluster), 200 concurrent requests of one
// tenant: the output tokens its answers used stay within its output_tokens_per_minute,
// plus what refilled during the run, plus one request's estimate. Settling with the real
// usage frees what the estimate over-reserved, so the budget is spent, not lost.
func TestOutputBudgetHoldsAcrossThreeReplicas(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		url     func(testing.TB) string
		cluster bool
	}{
		{"single", redistest.URL, false},
		{"cluster", redistest.ClusterURL, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			const limit, maxTokens = 3000, 100
			file := writeTenants(t, fmt.Sprintf("- name: batch\n  api_keys: [k-batch]\n  limits: {output_tokens_per_minute: %d}\n", limit))
			prefix := redistest.Prefix()
			url := tc.url(t)
			gs := startReplicas(t, 3, func(c *config.Config) {
				c.TenantsFile, c.RedisURL, c.RedisCluster, c.RedisKeyPrefix = file, url, tc.cluster, prefix
			}, slowRedisOK)
			var mu sync.Mutex
			var used int64
			codes := map[int]int{}
			var wg sync.WaitGroup
			start := time.Now()
			for i := range 200 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					r, err := gs[i%3].Send(t.Context(), "/v1/chat/completions", []byte(chat(maxTokens)), bearer("k-batch"))
					if !assert.NoError(t, err) {
						return
					}
					mu.Lock()
					defer mu.Unlock()
					codes[r.Status]++
					if r.Status == http.StatusOK {
						var u usage
						if assert.NoError(t, json.Unmarshal(r.Body, &u)) {
							used += u.Usage.CompletionTokens
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			refill := float64(limit) * elapsed.Seconds() / 60
			t.Logf("%s: statuses %v, %d output tokens used in %s (refill %.0f)", tc.name, codes, used, elapsed, refill)
			assert.Equal(t, 200, codes[http.StatusOK]+codes[http.StatusTooManyRequests], "only 200 and 429: %v", codes)
			assert.Positive(t, codes[http.StatusTooManyRequests])
			assert.LessOrEqual(t, float64(used), limit+refill+maxTokens, "the budget held across the replicas")
			assert.GreaterOrEqual(t, float64(used), float64(limit-maxTokens), "the budget was spent, not lost to estimates")
		})
	}
}

// A tenants file with a bad line stops the start with the flag, the file and the line.
func TestBadTenantsFileFailsTheStartNamingTheLine(t *testing.T) {
	t.Parallel()
	file := writeTenants(t, "- name: a\n  api_keys: [k1]\n  limits:\n    output_tokens_per_minit: 5\n")
	cfg := fleet.DefaultConfig()
	cfg.TenantsFile = file
	a := app.New(cfg)
	err := a.Err()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "invalid --tenants-file "+file+`: line 4: unknown limit "output_tokens_per_minit"`)
}
