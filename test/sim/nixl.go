package sim

import (
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"time"
)

// nixlBlockSize is the simulated KV block size in tokens (vLLM's default block_size 16).
const nixlBlockSize = 16

// nixlStore holds the KV blocks a vLLM NIXL prefill keeps for its decode, keyed by
// remote_request_id, until pulled or until the lease (HandoffTimeout) expires
// (engines.md §3.1: kv_lease_duration / VLLM_NIXL_ABORT_REQUEST_TIMEOUT).
type nixlStore struct {
	mu        sync.Mutex
	m         map[string]*nixlEntry
	nextBlock int64
	closed    bool
}

type nixlEntry struct {
	blocks  []int64
	payload kvPayload
	lease   *time.Timer
}

func newNixlStore() *nixlStore { return &nixlStore{m: make(map[string]*nixlEntry)} }

// put allocates blocks for a prompt of tokens tokens under reqID and starts its lease; on
// expiry the entry is dropped and onExpire runs, under st.mu (it must not call back into
// st), so size never shows the entry gone before onExpire's count.
func (st *nixlStore) put(reqID string, p kvPayload, lease time.Duration, onExpire func()) []int64 {
	n := max(1, (p.PromptTokens+nixlBlockSize-1)/nixlBlockSize)
	st.mu.Lock()
	defer st.mu.Unlock()
	blocks := make([]int64, n)
	for i := range blocks {
		st.nextBlock++
		blocks[i] = st.nextBlock
	}
	e := &nixlEntry{blocks: blocks, payload: p}
	if st.closed {
		return blocks
	}
	e.lease = time.AfterFunc(lease, func() {
		st.mu.Lock()
		defer st.mu.Unlock()
		if st.m[reqID] == e {
			delete(st.m, reqID)
			onExpire() // under the lock: size 0 means the expiry is counted
		}
	})
	st.m[reqID] = e
	return blocks
}

// take removes and returns the entry if the blocks match; status is the HTTP status of a
// refusal (404 unknown or consumed, 409 blocks mismatch).
func (st *nixlStore) take(reqID string, blocks []int64) (kvPayload, int) {
	st.mu.Lock()
	defer st.mu.Unlock()
	e := st.m[reqID]
	if e == nil {
		return kvPayload{}, http.StatusNotFound
	}
	if !slices.Equal(e.blocks, blocks) {
		return kvPayload{}, http.StatusConflict
	}
	delete(st.m, reqID)
	e.lease.Stop()
	return e.payload, http.StatusOK
}

// drop forgets reqID's blocks (its prefill client went away before the params reached it).
func (st *nixlStore) drop(reqID string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if e := st.m[reqID]; e != nil {
		e.lease.Stop()
		delete(st.m, reqID)
	}
}

func (st *nixlStore) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.closed = true
	for k, e := range st.m {
		e.lease.Stop()
		delete(st.m, k)
	}
}

func (st *nixlStore) size() int {
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.m)
}

// nixlPull is the body of POST /sim/nixl/pull, built by a decode from the
// kv_transfer_params it received.
type nixlPull struct {
	EngineID  string  `json:"remote_engine_id"`
	RequestID string  `json:"remote_request_id"`
	BlockIDs  []int64 `json:"remote_block_ids"`
}

// servePull is POST /sim/nixl/pull on a NIXL prefill's main listener: 400 engine id
// mismatch, 404 unknown or already consumed request, 409 block ids mismatch.
func (s *Server) servePull(w http.ResponseWriter, r *http.Request) {
	var req nixlPull
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil {
		writeSide(w, http.StatusBadRequest, "bad pull request: %v", err)
		return
	}
	if req.EngineID != s.cfg.EngineID {
		writeSide(w, http.StatusBadRequest, "remote_engine_id %q is not this engine (%q)", req.EngineID, s.cfg.EngineID)
		return
	}
	p, status := s.nixl.take(req.RequestID, req.BlockIDs)
	switch status {
	case http.StatusNotFound:
		writeSide(w, status, "unknown or already consumed remote_request_id %q", req.RequestID)
		return
	case http.StatusConflict:
		writeSide(w, status, "remote_block_ids %v do not match the blocks of %q", req.BlockIDs, req.RequestID)
		return
	}
	s.c.handoffsSent.Add(1) // before the answer, so the decode never reports first
	b, _ := json.Marshal(p)
	writeJSONStatus(w, http.StatusOK, b)
}
