package tenants_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/tenants"
)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(s), 0o600))
}

func TestResolveByKeyHeaderAndAPIKey(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	writeFile(t, path, "- name: a\n  priority: 3\n  api_keys: [ka]\n- name: b\n")
	r, err := tenants.New(tenants.Options{File: path, Header: "X-Tenant", APIKey: "gw"})
	require.NoError(t, err)
	assert.True(t, r.AuthRequired())

	tn, named, e := r.Resolve(hdr("Authorization", "Bearer ka"))
	require.Nil(t, e)
	assert.True(t, named)
	assert.Equal(t, "a", tn.Name)
	assert.Equal(t, 3, tn.Priority)

	tn, named, e = r.Resolve(hdr("Authorization", "bearer gw"))
	require.Nil(t, e)
	assert.False(t, named, "the --api-key holder is the anonymous tenant")
	assert.Empty(t, tn.Name)

	tn, named, e = r.Resolve(hdr("Authorization", "Bearer gw", "X-Tenant", "b"))
	require.Nil(t, e)
	assert.True(t, named)
	assert.Equal(t, "b", tn.Name, "the trusted header names the tenant")

	for name, h := range map[string]http.Header{
		"no key":                   hdr(),
		"wrong key":                hdr("Authorization", "Bearer kb"),
		"not bearer":               hdr("Authorization", "Basic ka"),
		"header names no tenant":   hdr("Authorization", "Bearer gw", "X-Tenant", "c"),
		"header is not a name":     hdr("Authorization", "Bearer gw", "X-Tenant", "a b"),
		"header without a key too": hdr("X-Tenant", "a"),
	} {
		_, _, e := r.Resolve(h)
		require.NotNil(t, e, name)
		assert.Equal(t, http.StatusUnauthorized, e.Status, name)
		assert.Equal(t, "invalid_api_key", e.Code, name)
	}
}

func TestResolveWithoutAFile(t *testing.T) {
	t.Parallel()
	r, err := tenants.New(tenants.Options{Header: "X-Tenant"})
	require.NoError(t, err)
	assert.False(t, r.AuthRequired())
	tn, named, e := r.Resolve(hdr("X-Tenant", "anyone"))
	require.Nil(t, e)
	assert.True(t, named)
	assert.Equal(t, "anyone", tn.Name)
	_, named, e = r.Resolve(hdr())
	require.Nil(t, e)
	assert.False(t, named, "an open gateway: the anonymous tenant")
}

func TestNewRefusesABadFileNamingTheLine(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	writeFile(t, path, "- name: a\n  api_keys: [ka]\n  limits: {requests_per_minute: lots}\n")
	_, err := tenants.New(tenants.Options{File: path})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--tenants-file")
	assert.Contains(t, err.Error(), "line 3: requests_per_minute must be a non-negative integer")
}

// syncBuf is a log sink safe for the polling goroutine.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *syncBuf) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func TestHotReloadKeepsTheOldKeysOnABadFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	writeFile(t, path, "- name: a\n  api_keys: [k1]\n")
	var logs syncBuf
	r, err := tenants.New(tenants.Options{File: path, Poll: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	r.Start()
	t.Cleanup(r.Close)

	// A good change comes into force: k2 joins, k1 leaves.
	writeFile(t, path, "- name: a\n  api_keys: [k2]\n")
	require.Eventually(t, func() bool { _, _, e := r.Resolve(hdr("Authorization", "Bearer k2")); return e == nil },
		5*time.Second, 5*time.Millisecond)
	_, _, e := r.Resolve(hdr("Authorization", "Bearer k1"))
	assert.NotNil(t, e)

	// A bad file is reported with its line; k2 keeps working, k3 does not arrive.
	writeFile(t, path, "- name: a\n  api_keys: [k3]\n  colour: blue\n")
	require.Eventually(t, func() bool { return bytes.Contains([]byte(logs.String()), []byte("line 3")) },
		5*time.Second, 5*time.Millisecond)
	assert.Contains(t, logs.String(), `unknown field \"colour\"`)
	_, _, e = r.Resolve(hdr("Authorization", "Bearer k2"))
	assert.Nil(t, e, "the old keys stay in force")
	_, _, e = r.Resolve(hdr("Authorization", "Bearer k3"))
	assert.NotNil(t, e)
	assert.NotContains(t, logs.String(), "k3", "keys are never logged")
}
