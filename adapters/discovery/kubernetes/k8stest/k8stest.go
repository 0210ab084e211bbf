// Package k8stest starts a real kube-apiserver and etcd on loopback for the service-discovery
// tests (the client-go fake clientset ignores label selectors in watches, so it cannot stand
// in for them). `make k8s-bins` (tools/k8stest/build.sh) builds the binaries into
// ~/.cache/smg-k8s/apiserver-v1.37.2-etcd-v3.7.3/ (the user cache folder), or $SMG_K8S_BIN names the directory. Without
// them Start skips the test, unless SMG_REQUIRE_K8S is set (.ci/run sets it): then it fails.
package k8stest

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// binDir is the cache folder of the binaries, keyed by their versions (tools/k8stest/build.sh).
const binDir = "apiserver-v1.37.2-etcd-v3.7.3"

func bins(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SMG_K8S_BIN")
	if dir == "" {
		cache, err := os.UserCacheDir() // $XDG_CACHE_HOME or ~/.cache, as tools/k8stest/build.sh
		require.NoError(t, err)
		dir = filepath.Join(cache, "smg-k8s", binDir)
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			if os.Getenv("SMG_REQUIRE_K8S") != "" {
				t.Fatalf("%s missing in %s: run make k8s-bins", b, dir)
			}
			t.Skipf("%s missing in %s: run make k8s-bins (with SMG_REQUIRE_K8S set, as .ci/run sets it, this fails instead)", b, dir)
		}
	}
	return dir
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// proc starts a command whose output goes to log; stopped (SIGTERM, then SIGKILL) at cleanup
// in reverse start order (the API server before etcd). exited is closed when the command
// ends.
func proc(t *testing.T, log string, name string, args ...string) (exited <-chan struct{}) {
	t.Helper()
	f, err := os.Create(log)
	require.NoError(t, err)
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = f.Close()
		if t.Failed() {
			b, _ := os.ReadFile(log)
			if len(b) > 3000 {
				b = b[len(b)-3000:]
			}
			t.Logf("%s:\n%s", filepath.Base(log), b)
		}
	})
	return done
}

// Start starts etcd and kube-apiserver on loopback ports and returns a client config (token
// auth, system:masters) once /readyz answers (within 60 s). Both are stopped at cleanup, the
// API server first.
func Start(t *testing.T) *rest.Config {
	t.Helper()
	bin := bins(t)
	dir := t.TempDir()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sa.key"), pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "sa.pub"), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "tokens.csv"), []byte(`testtoken,admin,admin-uid,"system:masters"`+"\n"), 0o600))

	// A port picked free can be taken by another process before etcd or the API server
	// binds it (parallel test packages dial loopback all the time): an attempt whose
	// process exits before /readyz answers is retried on new ports.
	for attempt := 1; ; attempt++ {
		cfg, err := start(t, bin, filepath.Join(dir, strconv.Itoa(attempt)))
		if err == nil {
			return cfg
		}
		if attempt == 3 {
			t.Fatalf("kube-apiserver: %v", err)
		}
		t.Logf("kube-apiserver attempt %d: %v; retrying on new ports", attempt, err)
	}
}

// start is one attempt of Start in dir (which holds the keys and tokens): an error when etcd
// or the API server exited, or /readyz did not answer within 60 s.
func start(t *testing.T, bin, dir string) (*rest.Config, error) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o700))
	for _, f := range []string{"sa.key", "sa.pub", "tokens.csv"} {
		b, err := os.ReadFile(filepath.Join(filepath.Dir(dir), f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o600))
	}
	ec, ep, port := freePort(t), freePort(t), freePort(t)
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ec)
	peer := "http://127.0.0.1:" + strconv.Itoa(ep)
	etcdExited := proc(t, filepath.Join(dir, "etcd.log"), filepath.Join(bin, "etcd"), "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL, "--listen-peer-urls", peer,
		"--initial-advertise-peer-urls", peer, "--initial-cluster", "default="+peer, "--unsafe-no-fsync", "--log-level", "error")
	apiExited := proc(t, filepath.Join(dir, "apiserver.log"), filepath.Join(bin, "kube-apiserver"), "--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--endpoint-reconciler-type=none",
		"--secure-port="+strconv.Itoa(port), "--cert-dir="+filepath.Join(dir, "certs"),
		"--token-auth-file="+filepath.Join(dir, "tokens.csv"), "--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc", "--service-account-key-file="+filepath.Join(dir, "sa.pub"),
		"--service-account-signing-key-file="+filepath.Join(dir, "sa.key"), "--service-cluster-ip-range=10.0.0.0/24",
		// No controller manager creates the default service account: do not require one.
		"--disable-admission-plugins=ServiceAccount")
	host := fmt.Sprintf("https://127.0.0.1:%d", port)
	hc := &http.Client{Timeout: time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // loopback test server with a self-signed cert
	deadline := time.Now().Add(60 * time.Second)
	for {
		req, _ := http.NewRequest(http.MethodGet, host+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer testtoken")
		if r, err := hc.Do(req); err == nil {
			_ = r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-etcdExited:
			return nil, fmt.Errorf("etcd exited before the API server was ready (see etcd.log)")
		case <-apiExited:
			return nil, fmt.Errorf("kube-apiserver exited before it was ready (see apiserver.log)")
		default:
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("not ready within 60 s")
		}
		time.Sleep(100 * time.Millisecond)
	}
	hc.CloseIdleConnections()
	return &rest.Config{Host: host, BearerToken: "testtoken", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}, nil
}
