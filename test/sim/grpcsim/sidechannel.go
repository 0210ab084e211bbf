package grpcsim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// The prefill's side channel (its bootstrap port): GET /kv?key=<key>[&engine_id=<id>]
// claims the KV under key and returns it as JSON; NIXL and Mooncake keys must name this
// engine's id. Rooms and Mooncake transfers are
// long-polled until the prefill registers them (bounded by the prefill's HandoffTimeout
// and the caller's context); NIXL blocks must already exist. Statuses: 200 with the
// payload, 404 nothing (in time), 409 a duplicate claim or a wrong engine id.
const kvPath = "/kv"

func (s *Server) serveKV(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	if key == "" {
		http.Error(w, "key is required", http.StatusBadRequest)
		return
	}
	id := r.URL.Query().Get("engine_id")
	needID := strings.HasPrefix(key, "mc:") || strings.HasPrefix(key, "nixl:")
	if needID && s.cfg.DPSize <= 1 && id != s.engineID() {
		http.Error(w, fmt.Sprintf("remote_engine_id %q is not this engine (%s)", id, s.engineID()), http.StatusConflict)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.HandoffTimeout)
	defer cancel()
	p, err := s.kv.take(ctx, key, !strings.HasPrefix(key, "nixl:"))
	switch {
	case err == nil && needID && s.cfg.DPSize > 1 && id != p.EngineID:
		// DP > 1: every rank is its own KV engine "{engine_id}_dp{rank}".
		s.c.unmatched.Add(1)
		http.Error(w, fmt.Sprintf("remote_engine_id %q is not the engine of the prefill's rank (%s)", id, p.EngineID), http.StatusConflict)
	case err == nil:
		s.c.sent.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(p)
	case errors.Is(err, errDuplicate):
		s.c.duplicate.Add(1)
		http.Error(w, "handoff key claimed twice: "+key, http.StatusConflict)
	default:
		http.Error(w, "no KV for "+key, http.StatusNotFound)
	}
}

// fetchKV claims key from the side channel at base ("http://host:port"), bounded by ctx.
func (s *Server) fetchKV(ctx context.Context, base, key, engineID string) (kvPayload, error) {
	q := url.Values{"key": {key}}
	if engineID != "" {
		q.Set("engine_id", engineID)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+kvPath+"?"+q.Encode(), nil)
	if err != nil {
		return kvPayload{}, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return kvPayload{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return kvPayload{}, fmt.Errorf("side channel %s: %d %s", base, resp.StatusCode, strings.TrimSpace(string(body)))
	}
	var p kvPayload
	if err := json.Unmarshal(body, &p); err != nil {
		return kvPayload{}, fmt.Errorf("side channel %s: %w", base, err)
	}
	return p, nil
}
