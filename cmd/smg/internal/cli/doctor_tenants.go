package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/tenant"
)

// doctorTenant is the part of a GET /tenants entry (adapters/api TenantInfo) the doctor reads.
type doctorTenant struct {
	Name   string        `json:"name"`
	Limits tenant.Limits `json:"limits"`
	Usage  struct {
		Requests     float64 `json:"requests_per_minute"`
		PromptTokens float64 `json:"prompt_tokens_per_minute"`
		OutputTokens float64 `json:"output_tokens_per_minute"`
		Concurrent   int64   `json:"max_concurrent_requests"`
	} `json:"usage"`
	Queued int64 `json:"queued"`
}

// fetchTenants GETs base/tenants. A 404 (a gateway older than the route) is no tenants,
// not an error.
func fetchTenants(ctx context.Context, base, adminKey string, timeout time.Duration) ([]doctorTenant, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/tenants", nil)
	if err != nil {
		return nil, err
	}
	if adminKey != "" {
		req.Header.Set("Authorization", "Bearer "+adminKey)
	}
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s/tenants: %w", base, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return nil, fmt.Errorf("GET %s/tenants: %w", base, err)
	}
	if resp.StatusCode == http.StatusNotFound {
		return nil, nil
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s/tenants: status %d: %s", base, resp.StatusCode, oneLine(string(body[:min(len(body), 300)])))
	}
	var l struct {
		Tenants []doctorTenant `json:"tenants"`
	}
	if err := json.Unmarshal(body, &l); err != nil {
		return nil, fmt.Errorf("GET %s/tenants: not a tenant list: %w", base, err)
	}
	return l.Tenants, nil
}

// tenantFindings fetches the tenants and warns about those near a limit
// (doctor.TenantsNearLimits); a failed fetch is one warning. It returns the number of
// tenants listed.
func tenantFindings(ctx context.Context, base, adminKey string, timeout time.Duration) (int, []doctor.Finding) {
	ts, err := fetchTenants(ctx, base, adminKey, timeout)
	if err != nil {
		return 0, []doctor.Finding{doctor.TenantsUnreadable(err)}
	}
	uses := make([]doctor.TenantUse, 0, len(ts))
	for _, t := range ts {
		uses = append(uses, doctor.TenantUse{Name: t.Name, Limits: t.Limits, Requests: t.Usage.Requests,
			PromptTokens: t.Usage.PromptTokens, OutputTokens: t.Usage.OutputTokens, Concurrent: t.Usage.Concurrent, Queued: t.Queued})
	}
	return len(ts), doctor.TenantsNearLimits(uses)
}
