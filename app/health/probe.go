package health

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/worker"
)

// ErrUnsupportedTransport is returned by Probe for workers that are not reached over HTTP
// (grpc://, ipc://): this gateway has no gRPC or ZMQ health probe yet.
var ErrUnsupportedTransport = errors.New("health probe: only http:// and https:// workers can be probed")

// Probe sends one health probe: GET <worker base URL><endpoint> with the worker's API key as a
// Bearer token, bounded by timeout (≤ 0 = no extra bound beyond ctx). It returns nil iff the
// worker answered 2xx (smg-spec.md §3.5); otherwise an error naming the URL and the status or
// transport failure. The response body is drained (up to 64 KiB) so the connection is reused.
func Probe(ctx context.Context, client *http.Client, w worker.Worker, endpoint string, timeout time.Duration) error {
	if w.Mode != "" && w.Mode != worker.ConnHTTP {
		return fmt.Errorf("%w (worker %s)", ErrUnsupportedTransport, w.DisplayURL())
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	url := w.BaseURL() + endpoint
	shown := worker.RedactURL(url) // the error is logged: no credentials
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("health probe %s: %w", shown, err)
	}
	if w.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+w.APIKey)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("health probe %s: %w", shown, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("health probe %s: status %d", shown, resp.StatusCode)
	}
	return nil
}
