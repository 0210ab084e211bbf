package pipeline

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/wire"
)

// maxTopLogprobs bounds top_logprobs (chat) and logprobs (completions): OpenAI allows 20.
const maxTopLogprobs = 20

// logprobAsk is what a client asked for: output token logprobs (on) with top alternatives
// per token, and (prompt) the prompt's logprobs from the prefill.
type logprobAsk struct {
	on     bool
	top    int
	prompt bool
}

// readLogprobs reads the logprob knobs of a chat ("logprobs": bool, "top_logprobs": 0..20,
// which needs logprobs) or completions ("logprobs": 0..20 alternatives; present = on)
// body (completions echo with logprobs: 501 not_supported), or a /generate one ("return_logprob": true, "top_logprobs_num": 0..20: the prompt's
// logprobs from the prefill and the output's from the decode; a streamed /generate with
// return_logprob is refused with 501 not_supported). Other routes ask for none.
func readLogprobs(rq *handoff.Request) (logprobAsk, error) {
	var b struct {
		Logprobs       json.RawMessage `json:"logprobs"`
		TopLogprobs    *int            `json:"top_logprobs"`
		ReturnLogprob  json.RawMessage `json:"return_logprob"`
		TopLogprobsNum int             `json:"top_logprobs_num"`
		Stream         bool            `json:"stream"`
		Echo           bool            `json:"echo"`
	}
	switch rq.Route {
	case handoff.RouteChat, handoff.RouteCompletions:
	case handoff.RouteGenerate:
		if !rq.Logprobs {
			return logprobAsk{}, nil
		}
	default:
		return logprobAsk{}, nil
	}
	if err := json.Unmarshal(rq.Body.Bytes(), &b); err != nil {
		return logprobAsk{}, bodyError(err)
	}
	if rq.Route == handoff.RouteGenerate {
		if b.Stream {
			return logprobAsk{}, errs.New(http.StatusNotImplemented, wire.CodeNotSupported,
				"a streamed /generate with return_logprob is not served over gRPC PD by this gateway yet; ask without stream or use HTTP workers")
		}
		var on bool
		if json.Unmarshal(b.ReturnLogprob, &on) != nil {
			return logprobAsk{}, errs.BadRequest("return_logprob must be a boolean over gRPC PD")
		}
		if b.TopLogprobsNum < 0 || b.TopLogprobsNum > maxTopLogprobs {
			return logprobAsk{}, errs.BadRequest("top_logprobs_num must be between 0 and %d", maxTopLogprobs)
		}
		return logprobAsk{on: on, top: b.TopLogprobsNum, prompt: on}, nil
	}
	raw := bytes.TrimSpace(b.Logprobs)
	null := len(raw) == 0 || string(raw) == "null"
	if rq.Route == handoff.RouteCompletions {
		if null {
			return logprobAsk{}, nil
		}
		var k int
		if json.Unmarshal(raw, &k) != nil || k < 0 || k > maxTopLogprobs {
			return logprobAsk{}, errs.BadRequest("logprobs must be an integer between 0 and %d", maxTopLogprobs)
		}
		if b.Echo {
			// The prompt's logprobs would come from the prefill's input_logprobs, which this
			// path does not ask for yet (docs/grpc-pd.md "Not yet"): refuse rather than answer
			// a 200 without them.
			return logprobAsk{}, errs.New(http.StatusNotImplemented, wire.CodeNotSupported,
				"/v1/completions with echo and logprobs (the prompt's logprobs) is not served over gRPC PD by this gateway yet; drop echo or logprobs, or use HTTP workers")
		}
		return logprobAsk{on: true, top: k}, nil
	}
	on := false
	if !null && json.Unmarshal(raw, &on) != nil {
		return logprobAsk{}, errs.BadRequest("logprobs must be a boolean")
	}
	top := 0
	if b.TopLogprobs != nil {
		top = *b.TopLogprobs
		if top < 0 || top > maxTopLogprobs {
			return logprobAsk{}, errs.BadRequest("top_logprobs must be between 0 and %d", maxTopLogprobs)
		}
		if top > 0 && !on {
			return logprobAsk{}, errs.BadRequest("top_logprobs requires logprobs to be true")
		}
	}
	return logprobAsk{on: on, top: top}, nil
}
