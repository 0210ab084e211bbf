package pipeline

import (
	"context"
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/respond"
	"github.com/smg-go/smg/domain/text"
	"github.com/smg-go/smg/domain/worker"
)

// CountTokens answers /v1/messages/count_tokens on a gRPC worker's model: the Anthropic
// request rendered through the chat template and encoded, {"input_tokens": N} (seed
// "Supported APIs": counted by the gateway, no leg).
func (pl *Pipeline) CountTokens(ctx context.Context, w http.ResponseWriter, rq *handoff.Request, p *worker.Live) error {
	name := rq.Model
	if name == "" && len(p.Models) > 0 {
		name = p.Models[0]
	}
	m, err := pl.tokenizer(ctx, name, p, p)
	if err != nil {
		return err
	}
	in, err := text.FromAnthropic(rq.Body.Bytes())
	if err != nil {
		return errs.BadRequest("%v", err)
	}
	_, ids, err := m.ChatPrompt(in)
	if err != nil {
		return errs.BadRequest("chat template: %v", err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(respond.CountTokens(len(ids)))
	return nil
}
