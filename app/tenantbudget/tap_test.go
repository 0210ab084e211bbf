package tenantbudget_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/adapters/store/memory"
	"github.com/smg-go/smg/app/tenantbudget"
	"github.com/smg-go/smg/domain/tenant"
	"github.com/smg-go/smg/ports"
)

func admit(t *testing.T, b *tenantbudget.Budgets, tn tenant.Tenant, est ports.TokenUse) *tenantbudget.Ticket {
	t.Helper()
	k, e := b.Admit(tenant.WithTenant(context.Background(), tn), est)
	require.Nil(t, e)
	require.NotNil(t, k)
	return k
}

func TestTapReadsTheUsageOfEveryShape(t *testing.T) {
	t.Parallel()
	est := ports.TokenUse{Prompt: 50, Output: 1000}
	for _, tc := range []struct {
		name, ctype string
		status      int
		chunks      []string
		want        ports.TokenUse
	}{
		{"chat body", "application/json", 200, []string{`{"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":10,"total_tokens":22}}`}, ports.TokenUse{Prompt: 12, Output: 10}},
		{"generate body", "application/json", 200, []string{`{"text":"x","meta_info":{"prompt_tokens":7,"completion_tokens":3}}`}, ports.TokenUse{Prompt: 7, Output: 3}},
		{"chat stream with usage split across writes", "text/event-stream", 200, []string{
			"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: {\"choices\":[],\"usa", "ge\":{\"prompt_tokens\":9,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n"},
			ports.TokenUse{Prompt: 9, Output: 4}},
		{"messages stream", "text/event-stream", 200, []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":20,\"output_tokens\":1}}}\n\n",
			"event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":15}}\n\n"}, ports.TokenUse{Prompt: 20, Output: 15}},
		{"responses stream", "text/event-stream", 200, []string{
			"data: {\"type\":\"response.completed\",\"response\":{\"usage\":{\"input_tokens\":5,\"output_tokens\":6}}}\n\n"}, ports.TokenUse{Prompt: 5, Output: 6}},
		{"stream cut without usage: one token per event", "text/event-stream", 200, []string{
			"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", "data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n", "data: {\"choices\":[{\"delta\":{\"con"},
			ports.TokenUse{Prompt: 50, Output: 2}},
		{"error answer", "application/json", 503, []string{`{"error":{"code":"x"}}`}, ports.TokenUse{}},
		{"nothing written (client left)", "", 0, nil, ports.TokenUse{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := tenantbudget.New(memory.NewTenantBudgets(nil), tenantbudget.Options{})
			k := admit(t, b, tenant.Tenant{Name: "a", Limits: tenant.Limits{OutputTokensPerMinute: 100000}}, est)
			rec := httptest.NewRecorder()
			tap := k.Tap(rec)
			if tc.status != 0 {
				tap.Header().Set("Content-Type", tc.ctype)
				tap.WriteHeader(tc.status)
			}
			for _, c := range tc.chunks {
				_, _ = tap.Write([]byte(c))
			}
			assert.Equal(t, tc.want, tap.Used(est))
		})
	}
}

// Settle frees what the estimate over-reserved: a request that used 10 of 1000 reserved
// output tokens leaves 10 charged, and the next request of 990 fits.
func TestSettleFreesTheUnusedEstimate(t *testing.T) {
	t.Parallel()
	store := memory.NewTenantBudgets(nil)
	b := tenantbudget.New(store, tenantbudget.Options{TTL: time.Minute})
	tn := tenant.Tenant{Name: "a", Limits: tenant.Limits{OutputTokensPerMinute: 1000}}
	ctx := tenant.WithTenant(context.Background(), tn)
	k := admit(t, b, tn, ports.TokenUse{Prompt: 5, Output: 1000})
	_, e := b.Admit(ctx, ports.TokenUse{Output: 100})
	require.NotNil(t, e, "the estimate filled the bucket")
	assert.Equal(t, http.StatusTooManyRequests, e.Status)
	assert.Equal(t, "tenant_rate_limited", e.Code)
	assert.GreaterOrEqual(t, e.RetryAfterSecs, 1)
	k.Settle(ports.TokenUse{Prompt: 5, Output: 10})
	k.Settle(ports.TokenUse{Prompt: 5, Output: 0}) // a second settle changes nothing
	u, err := store.Usage(ctx, tn)
	require.NoError(t, err)
	assert.InDelta(t, 10, u.OutputTokens, 2, "990 of 1000 freed")
	assert.Equal(t, int64(0), u.Concurrent)
	_, e = b.Admit(ctx, ports.TokenUse{Output: 985})
	assert.Nil(t, e, "the freed tokens admit the next request")
}

func TestNoTenantOrNoLimitsAdmitsWithoutATicket(t *testing.T) {
	t.Parallel()
	b := tenantbudget.New(memory.NewTenantBudgets(nil), tenantbudget.Options{})
	k, e := b.Admit(context.Background(), ports.TokenUse{Output: 1 << 30})
	assert.Nil(t, k)
	assert.Nil(t, e)
	k, e = b.Admit(tenant.WithTenant(context.Background(), tenant.Tenant{Name: "free"}), ports.TokenUse{Output: 1 << 30})
	assert.Nil(t, k)
	assert.Nil(t, e)
}
