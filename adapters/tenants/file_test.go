package tenants_test

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/tenants"
	"github.com/smg-go/smg/domain/tenant"
)

const goodFile = `
- name: interactive
  priority: 10
  api_keys: [key-int-1, key-int-2]
  limits:
    requests_per_minute: 600
    prompt_tokens_per_minute: 100000
    output_tokens_per_minute: 20000
    max_concurrent_requests: 8
- name: batch
  api_key_sha256: %s
  limits: {output_tokens_per_minute: 5000}
- name: proxied
`

func sum(s string) string { d := sha256.Sum256([]byte(s)); return hex.EncodeToString(d[:]) }

func TestParseReadsEveryContractField(t *testing.T) {
	t.Parallel()
	d, err := tenants.Parse([]byte(sprintf(goodFile, sum("key-batch"))))
	require.NoError(t, err)
	assert.Equal(t, 3, d.Len())
	assert.Equal(t, 3, d.Keys())
	it, ok := d.ByKey("key-int-2")
	require.True(t, ok)
	assert.Equal(t, tenant.Tenant{Name: "interactive", Priority: 10, Limits: tenant.Limits{
		RequestsPerMinute: 600, PromptTokensPerMinute: 100000, OutputTokensPerMinute: 20000, MaxConcurrentRequests: 8}}, it)
	b, ok := d.ByKey("key-batch")
	require.True(t, ok, "a key given by its SHA-256 digest")
	assert.Equal(t, tenant.Tenant{Name: "batch", Limits: tenant.Limits{OutputTokensPerMinute: 5000}}, b)
	_, ok = d.ByKey("key-int-3")
	assert.False(t, ok)
	p, ok := d.ByName("proxied")
	assert.True(t, ok)
	assert.Equal(t, "proxied", p.Name)
	names := []string{}
	for _, t := range d.Tenants() {
		names = append(names, t.Name)
	}
	assert.Equal(t, []string{"interactive", "batch", "proxied"}, names)
}

func TestParseAcceptsAnObjectAndAnEmptyFile(t *testing.T) {
	t.Parallel()
	d, err := tenants.Parse([]byte("tenants:\n  - name: a\n    api_keys: k1\n"))
	require.NoError(t, err)
	_, ok := d.ByKey("k1")
	assert.True(t, ok)
	d, err = tenants.Parse(nil)
	require.NoError(t, err)
	assert.Equal(t, 0, d.Len())
}

func TestParseNamesTheBadLine(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, file, want string
	}{
		{"syntax", "- name: a\n- name: b\n  priority: 1: 2\n", "line 3: not YAML: mapping values are not allowed"},
		{"unknown field", "- name: a\n  api_keys: [k1]\n  prio: 3\n", `line 3: unknown field "prio"`},
		{"unknown limit", "- name: a\n  limits:\n    tokens_per_minute: 5\n", `line 3: unknown limit "tokens_per_minute"`},
		{"negative limit", "- name: a\n  limits:\n    requests_per_minute: -1\n", "line 3: requests_per_minute must be a non-negative integer"},
		{"priority not an integer", "- name: a\n  priority: high\n", "line 2: priority must be an integer"},
		{"bad name", "- name: a\n- name: 'b c'\n", "line 2: name must be"},
		{"no name", "- name: a\n- priority: 1\n", "line 2: the tenant has no name"},
		{"duplicate name", "- name: a\n- name: a\n", `line 2: tenant "a" is listed twice`},
		{"key of two tenants", "- name: a\n  api_keys: [k1]\n- name: b\n  api_keys:\n    - k2\n    - k1\n", `line 6: this API key already belongs to tenant "a"`},
		{"bad digest", "- name: a\n  api_key_sha256: abc\n", "line 2: api_key_sha256 must be 64 hex digits"},
		{"not a list", "name: a\n", `line 1: expected a list of tenants`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := tenants.Parse([]byte(tc.file))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
