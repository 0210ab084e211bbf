package sim

import (
	"encoding/json"
	"strconv"
)

// maxDPSize bounds Config.DPSize (the per-rank counters are a fixed array).
const maxDPSize = 64

// checkDPRank is an SGLang engine's view of the DP rank fields of a --dp-aware leg
// (smg-spec.md §2.5.3): with DPSize > 1, routed_dp_rank must be an integer rank of this
// engine and a decode's disagg_prefill_dp_rank, when present, a rank >= 0. A valid leg is
// counted under its routed rank, and the ranks are kept in j: a prefill hands its rank to
// the decode with the KV, and a decode whose disagg_prefill_dp_rank differs fails the
// transfer.
func (s *Server) checkDPRank(raw *rawReq, j *job) *reqError {
	if s.cfg.Engine != EngineSGLang || s.cfg.DPSize <= 1 {
		return nil
	}
	r, ok := rankOf(raw.RoutedDPRank)
	if !ok || r >= s.cfg.DPSize {
		return badRequest("routed_dp_rank %s is not a rank of this engine (dp_size %d)", orNone(raw.RoutedDPRank), s.cfg.DPSize)
	}
	if len(raw.PrefillDPRank) > 0 {
		pr, ok := rankOf(raw.PrefillDPRank)
		if !ok {
			return badRequest("disagg_prefill_dp_rank %s is not a DP rank", orNone(raw.PrefillDPRank))
		}
		j.prefillRank = &pr
	}
	j.routedRank = &r
	s.c.dpRanks[r].Add(1)
	return nil
}

func rankText(r *int) string {
	if r == nil {
		return "(absent)"
	}
	return strconv.Itoa(*r)
}

func rankOf(raw json.RawMessage) (int, bool) {
	var r int
	if len(raw) == 0 || json.Unmarshal(raw, &r) != nil || r < 0 || r >= maxDPSize {
		return 0, false
	}
	return r, true
}

func (c *counters) dpSnapshot() map[string]int64 {
	var m map[string]int64
	for i := range c.dpRanks {
		if n := c.dpRanks[i].Load(); n > 0 {
			if m == nil {
				m = map[string]int64{}
			}
			m[strconv.Itoa(i)] = n
		}
	}
	return m
}
