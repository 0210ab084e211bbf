package grpcsim

import (
	"strconv"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxDPSize bounds Config.DPSize (the per-rank counters are a fixed array).
const maxDPSize = 64

// checkDPRank refuses, with DPSize > 1, a data_parallel_rank pin that is not a rank of this
// engine (INVALID_ARGUMENT) and counts SGLang and vLLM legs per pinned rank (TokenSpeed
// legs are counted by room residue in handoff).
func (s *Server) checkDPRank(req genRequest) error {
	if s.cfg.DPSize <= 1 || req.dpRank == nil {
		return nil
	}
	r := *req.dpRank
	if r < 0 || r >= s.cfg.DPSize {
		return status.Errorf(codes.InvalidArgument, "data_parallel_rank %d is out of range for dp_size %d", r, s.cfg.DPSize)
	}
	if s.cfg.Engine != EngineTokenSpeed {
		s.c.dpRanks[r].Add(1)
	}
	return nil
}

// legEngineID is the vLLM KV engine id of the rank serving req: with DPSize > 1 and a
// data_parallel_rank pin "{engine_id}_dp{rank}" (vLLM names each DP rank's engine so),
// else the reported engine id.
func (s *Server) legEngineID(req genRequest) string {
	if s.cfg.DPSize > 1 && req.dpRank != nil {
		return s.engineID() + "_dp" + strconv.Itoa(*req.dpRank)
	}
	return s.engineID()
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
