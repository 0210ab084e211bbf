package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

// probeDefaults: the gateway's default --port (smg-spec.md §8) and the readiness endpoint
// (smg-spec.md §3.8).
const (
	probeDefaultPort = 30000
	probeDefaultPath = "/readiness"
)

// newProbe is `smg probe`: one GET of the gateway's /readiness (or --path) on this host, for
// container health checks in images without a shell (Docker HEALTHCHECK, ECS healthCheck,
// Kubernetes exec probes). Exit 0 on a 2xx answer; exit 1, with one line on stderr naming
// the status and the body's reason, on anything else (refused, timeout, 503 draining).
// The port is --port, else PORT (Cloud Run), else SMG_PORT, else 30000 — the same
// precedence `smg launch` uses, so the probe needs no flags in the gateway's own container.
func newProbe(env Env, stdout io.Writer) *cobra.Command {
	var (
		target  string
		port    int
		path    string
		timeout time.Duration
		quiet   bool
	)
	cmd := &cobra.Command{
		Use:   "probe [flags]",
		Short: "Check the local gateway's /readiness (exit 0 ready, 1 not); for container health checks",
		Long: "GET http://127.0.0.1:<port>/readiness and exit 0 on 2xx, 1 otherwise (connection refused, timeout, " +
			"503 while draining or without healthy workers). The port comes from --port, else PORT, else SMG_PORT, " +
			"else 30000. No shell is needed: `HEALTHCHECK CMD [\"/usr/local/bin/smg\", \"probe\"]`.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := probeURL(target, port, cmd.Flags().Changed("port"), path, env)
			if err != nil {
				return err
			}
			if timeout <= 0 {
				return usagef("invalid value %q for --timeout: must be positive", timeout)
			}
			line, err := probeOnce(cmd.Context(), u, timeout)
			if err != nil {
				return &runError{err}
			}
			if !quiet {
				fmt.Fprintln(stdout, line)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&target, "url", "", "probe this full `url` instead of http://127.0.0.1:<port><path>")
	f.IntVar(&port, "port", probeDefaultPort, "gateway `port` on 127.0.0.1 (default: PORT, else SMG_PORT, else 30000)")
	f.StringVar(&path, "path", probeDefaultPath, "`path` to GET (/readiness, /liveness or /health)")
	f.DurationVar(&timeout, "timeout", 3*time.Second, "give up after this `duration`")
	f.BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	return cmd
}

// probeURL resolves the URL to GET. An explicit --url wins; otherwise the port follows
// --port (when given) > PORT > SMG_PORT > 30000.
func probeURL(target string, port int, portSet bool, path string, env Env) (string, error) {
	if target != "" {
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", usagef("invalid value %q for --url: expected http://host:port/path", target)
		}
		return target, nil
	}
	if !portSet {
		for _, name := range []string{"PORT", EnvName("port")} {
			raw, ok := env(name)
			if raw = strings.TrimSpace(raw); !ok || raw == "" {
				continue
			}
			n, err := strconv.Atoi(raw)
			if err != nil {
				return "", usagef("invalid value %q for %s: expected a whole number", raw, name)
			}
			port = n
			break
		}
	}
	if port < 1 || port > 65535 {
		return "", usagef("invalid port %d: must be between 1 and 65535", port)
	}
	if !strings.HasPrefix(path, "/") {
		return "", usagef("invalid value %q for --path: must start with /", path)
	}
	return "http://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)) + path, nil
}

// probeOnce GETs u once, ignoring proxy variables (a container's HTTP_PROXY must not
// capture a loopback probe). It returns "ready: 200 <body>" on 2xx, else an error naming
// the status and the start of the body (which carries /readiness's reason).
func probeOnce(ctx context.Context, u string, timeout time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", fmt.Errorf("probe %s: %w", u, err)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return "", fmt.Errorf("probe %s: no answer within %s", u, timeout)
		}
		return "", fmt.Errorf("probe %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	text := oneLine(string(body))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", fmt.Errorf("probe %s: status %d: %s", u, resp.StatusCode, text)
	}
	return fmt.Sprintf("ready: %d %s", resp.StatusCode, text), nil
}
