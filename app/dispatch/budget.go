package dispatch

import (
	"context"
	"net/http"

	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/ports"
)

// chargeTenant reserves the request's estimated tokens (preq's prompt and expected decode
// tokens) against its tenant's budgets before any leg runs. Over a limit it answers the 429
// tenant_rate_limited itself and returns ok false. Admitted, it returns the writer to serve
// the request through (it reads the usage the answer reports) and the settle function to
// call when the request ends, whatever its outcome.
func (d *Dispatcher) chargeTenant(ctx context.Context, w http.ResponseWriter, preq *policy.Request) (http.ResponseWriter, func(), bool) {
	est := ports.TokenUse{Prompt: int64(preq.PromptTokens), Output: int64(preq.DecodeTokens)}
	ticket, e := d.budgets.Admit(ctx, est)
	if e != nil {
		WriteError(w, e)
		return w, nil, false
	}
	if ticket == nil {
		return w, func() {}, true
	}
	tw := ticket.Tap(w)
	return tw, func() { ticket.Settle(tw.Used(ticket.Reserved())) }, true
}
