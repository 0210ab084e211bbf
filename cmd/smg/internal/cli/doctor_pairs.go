package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"

	"github.com/smg-go/smg/app/doctor"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// pairProber probes one prefill/decode pair through the gateway at base: POST
// /workers/probe-pair {"prefill":<id>,"decode":<id>} with the admin key, bounded by the
// context doctor.Check gives it. A non-200 answer is an error naming its status and body;
// a 404 that is not WORKER_NOT_FOUND (no such route), or a 405, is
// doctor.ErrPairProbeUnsupported.
func pairProber(base, adminKey string) func(context.Context, worker.Worker, worker.Worker) (doctor.PairProbe, error) {
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DisableKeepAlives: true}}
	return func(ctx context.Context, p, d worker.Worker) (doctor.PairProbe, error) {
		body, _ := json.Marshal(map[string]string{"prefill": p.ID, "decode": d.ID})
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/workers/probe-pair", bytes.NewReader(body))
		if err != nil {
			return doctor.PairProbe{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		if adminKey != "" {
			req.Header.Set("Authorization", "Bearer "+adminKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return doctor.PairProbe{}, err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		if err != nil {
			return doctor.PairProbe{}, err
		}
		if (resp.StatusCode == http.StatusNotFound && !bytes.Contains(b, []byte(wire.CodeWorkerNotFound))) || resp.StatusCode == http.StatusMethodNotAllowed {
			return doctor.PairProbe{}, doctor.ErrPairProbeUnsupported // no such route: an older gateway
		}
		if resp.StatusCode != http.StatusOK {
			return doctor.PairProbe{}, fmt.Errorf("POST /workers/probe-pair: status %d: %s", resp.StatusCode, oneLine(string(b[:min(len(b), 300)])))
		}
		var v struct {
			Outcome          string `json:"outcome"`
			Status           int    `json:"status"`
			ErrorCode        string `json:"error_code"`
			Error            string `json:"error"`
			Connector        string `json:"connector"`
			PromptTokens     int    `json:"prompt_tokens"`
			CachedTokens     int    `json:"cached_tokens"`
			RecomputedTokens int    `json:"recomputed_tokens"`
		}
		if err := json.Unmarshal(b, &v); err != nil {
			return doctor.PairProbe{}, fmt.Errorf("POST /workers/probe-pair: not a probe result: %w", err)
		}
		return doctor.PairProbe{Outcome: v.Outcome, Status: v.Status, ErrorCode: v.ErrorCode, Error: v.Error, Connector: v.Connector,
			PromptTokens: v.PromptTokens, CachedTokens: v.CachedTokens, RecomputedTokens: v.RecomputedTokens}, nil
	}
}
