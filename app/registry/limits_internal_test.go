package registry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/worker"
)

// fakeDNS resolves the names of m; others fail.
func fakeDNS(m map[string]string) func(context.Context, string) ([]net.IP, error) {
	return func(_ context.Context, host string) ([]net.IP, error) {
		if a, ok := m[host]; ok {
			return []net.IP{net.ParseIP(a)}, nil
		}
		return nil, errors.New("no such host")
	}
}

func TestHostPolicyRefusesMetadataAddressesUnlessListed(t *testing.T) {
	t.Parallel()
	dns := fakeDNS(map[string]string{"metadata.google.internal": "169.254.169.254", "gpu-0": "10.1.2.3", "ll6": "fe80::1"})
	open := newHostPolicy(nil, dns)
	// An allow-list restricts registrations to what it lists, blocked ranges included.
	listed := newHostPolicy([]string{"169.254.169.254", "fe80::/10"}, dns)
	only := newHostPolicy([]string{"10.0.0.0/8", "named-host"}, dns)
	cases := []struct {
		url                  string
		open, listed, onlyOK bool
	}{
		{"http://169.254.169.254:80", false, true, false},
		{"http://169.254.1.1:8000", false, false, false},
		{"http://[fe80::1]:8000", false, true, false},
		{"http://[fd00:ec2::254]:80", false, false, false},
		{"http://[::ffff:169.254.169.254]:80", false, true, false},
		{"http://metadata.google.internal", false, true, false},
		{"http://ll6:8000", false, true, false},
		{"http://u:p@169.254.169.254:80", false, true, false},
		{"http://10.0.0.5:8000", true, false, true},
		{"http://gpu-0:8000", true, false, true},
		{"http://named-host:8000", true, false, true},
		{"http://unresolvable:8000", true, false, false},
		{"http://127.0.0.1:8000@3", true, false, false},
		{"ipc:///tmp/w.sock", true, true, true},
	}
	for _, tc := range cases {
		mode, err := worker.ValidateURL(tc.url)
		require.NoError(t, err, tc.url)
		w := worker.Worker{URL: tc.url, Mode: mode}
		for _, p := range []struct {
			name string
			pol  hostPolicy
			ok   bool
		}{{"open", open, tc.open}, {"listed", listed, tc.listed}, {"allow-list", only, tc.onlyOK}} {
			err := p.pol.check(context.Background(), w, true)
			if p.ok {
				assert.NoError(t, err, "%s with %s policy", tc.url, p.name)
				continue
			}
			e, ok := errs.As(err)
			if assert.True(t, ok, "%s with %s policy: want a 400, got %v", tc.url, p.name, err) {
				assert.Equal(t, http.StatusBadRequest, e.Status)
				assert.NotContains(t, e.Message, "u:p@", "credentials are not echoed")
			}
		}
	}
}

func TestGuardedDialerRefusesBlockedAddresses(t *testing.T) {
	t.Parallel()
	tr := &http.Transport{}
	newHostPolicy(nil, nil).guardDialer(tr)
	_, err := tr.DialContext(context.Background(), "tcp", "169.254.169.254:80")
	assert.ErrorIs(t, err, errBlockedDial)
}

func TestStartupWorkersAreCheckedWithoutLookups(t *testing.T) {
	t.Parallel()
	noDNS := func(context.Context, string) ([]net.IP, error) {
		t.Error("a startup worker's host name was looked up")
		return nil, errors.New("no")
	}
	open := newHostPolicy(nil, noDNS)
	assert.NoError(t, open.check(context.Background(), worker.Worker{URL: "http://prefill-0:8000", Mode: worker.ConnHTTP}, false))
	assert.Error(t, open.check(context.Background(), worker.Worker{URL: "http://169.254.169.254", Mode: worker.ConnHTTP}, false))
	only := newHostPolicy([]string{"prefill-0"}, noDNS)
	assert.NoError(t, only.check(context.Background(), worker.Worker{URL: "http://prefill-0:8000", Mode: worker.ConnHTTP}, false))
	assert.Error(t, only.check(context.Background(), worker.Worker{URL: "http://decode-0:8000", Mode: worker.ConnHTTP}, false))
}
