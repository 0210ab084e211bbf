package tenants_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/redis/redistest"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/test/fleet"
)

type tenantList struct {
	Tenants []struct {
		Name     string           `json:"name"`
		Priority int              `json:"priority"`
		Limits   map[string]int64 `json:"limits"`
		Usage    struct {
			Requests     float64 `json:"requests_per_minute"`
			PromptTokens float64 `json:"prompt_tokens_per_minute"`
			OutputTokens float64 `json:"output_tokens_per_minute"`
			Concurrent   int64   `json:"max_concurrent_requests"`
		} `json:"usage"`
		Queued int64 `json:"queued"`
	} `json:"tenants"`
}

func getTenants(t *testing.T, g *fleet.Gateway, key string) (int, tenantList) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, g.URL+"/tenants", nil)
	require.NoError(t, err)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	r, err := g.Do(req)
	require.NoError(t, err)
	var l tenantList
	if r.Status == http.StatusOK {
		require.NoError(t, json.Unmarshal(r.Body, &l), "%s", r.Body)
	}
	return r.Status, l
}

// GET /tenants lists the file's tenants with their limits and usage; the usage
// is the shared Redis bucket, so requests served by one replica show on another, and it
// moves with them: one request per request, the settled tokens, nothing left in flight.
func TestTenantsEndpointShowsSharedUsage(t *testing.T) {
	t.Parallel()
	url := redistest.URL(t)
	prefix := redistest.Prefix()
	file := writeTenants(t, `
- name: heavy
  priority: 5
  api_keys: [k-heavy]
  limits: {requests_per_minute: 60, prompt_tokens_per_minute: 120, output_tokens_per_minute: 6000, max_concurrent_requests: 4}
- name: light
  api_keys: [k-light]
`)
	gs := startReplicas(t, 2, func(c *config.Config) {
		c.TenantsFile, c.RedisURL, c.RedisKeyPrefix = file, url, prefix
	}, slowRedisOK)

	status, before := getTenants(t, gs[1], "")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, before.Tenants, 2)
	h, l := before.Tenants[0], before.Tenants[1]
	assert.Equal(t, "heavy", h.Name)
	assert.Equal(t, 5, h.Priority)
	assert.Equal(t, map[string]int64{"requests_per_minute": 60, "prompt_tokens_per_minute": 120,
		"output_tokens_per_minute": 6000, "max_concurrent_requests": 4}, h.Limits)
	assert.Zero(t, h.Usage.Requests)
	assert.Zero(t, h.Usage.OutputTokens)
	assert.Equal(t, "light", l.Name)
	assert.Empty(t, l.Limits)

	var used int64
	for i := range 3 {
		r := gs[0].Post(t, "/v1/chat/completions", chat(50), bearer("k-heavy"))
		require.Equal(t, http.StatusOK, r.Status, "request %d: %s", i, r.Body)
		var u usage
		require.NoError(t, json.Unmarshal(r.Body, &u))
		used += u.Usage.CompletionTokens
	}
	require.Positive(t, used)

	status, after := getTenants(t, gs[1], "")
	require.Equal(t, http.StatusOK, status)
	require.Len(t, after.Tenants, 2)
	h = after.Tenants[0]
	// Buckets refill at limit/60 per second (1 request, 2 prompt and 100 output tokens per second
	// here): the levels are at most what was charged, and above it minus a few seconds of
	// refill (the hang bound of the three requests).
	assert.LessOrEqual(t, h.Usage.Requests, 3.0)
	assert.Greater(t, h.Usage.Requests, 0.0, "three requests were charged on the other replica")
	assert.LessOrEqual(t, h.Usage.OutputTokens, float64(used), "settled to the tokens used, not the 150 reserved")
	assert.Greater(t, h.Usage.PromptTokens, 0.0)
	assert.Zero(t, h.Usage.Concurrent, "every request settled")
	assert.Zero(t, h.Queued)
	assert.Zero(t, after.Tenants[1].Usage.Requests, "light has no limits, nothing is charged")
}
