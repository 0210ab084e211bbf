package sim

import (
	"encoding/json"
	"net/http"
	"sort"
)

type rerankReq struct {
	Model     string            `json:"model"`
	Query     string            `json:"query"`
	Documents []json.RawMessage `json:"documents"`
	TopN      int               `json:"top_n"`
	SimFault  json.RawMessage   `json:"sim_fault"`
}

type rerankResult struct {
	Index          int     `json:"index"`
	Document       any     `json:"document"`
	RelevanceScore float64 `json:"relevance_score"`
}

// serveRerank is POST /v1/rerank (vLLM/Jina shape, served by both engines): each document
// gets a deterministic score in [0,1) from the query and document tokens; results are sorted
// by score, cut to top_n when set. No handoff; faults apply.
func (s *Server) serveRerank(w http.ResponseWriter, r *http.Request) {
	s.c.requests.Add(1)
	s.c.enter()
	defer s.c.leave()
	ctx := r.Context()
	o := &out{w: w, rc: http.NewResponseController(w), s: s, ctx: ctx}
	var req rerankReq
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBodyBytes)).Decode(&req); err != nil {
		o.fail(badRequest("JSON decode error: %v", err))
		return
	}
	faults, err := parseRequestFaults(req.SimFault, s.cfg.Role, append([]Fault(nil), s.faults...))
	if err != nil {
		o.fail(badRequest("%v", err))
		return
	}
	fs := resolveFaults(faults)
	if !s.applyFaults(ctx, o, &fs) {
		return
	}
	if req.Query == "" || len(req.Documents) == 0 {
		o.fail(badRequest("query and documents are required"))
		return
	}
	q := digestIDs(tokenize(req.Query, nil))
	total := len(tokenize(req.Query, nil))
	res := make([]rerankResult, len(req.Documents))
	for i, d := range req.Documents {
		text, err := contentText(d)
		if err != nil || (len(d) > 0 && d[0] == '{') {
			var obj struct {
				Text string `json:"text"`
			}
			_ = json.Unmarshal(d, &obj)
			text = obj.Text
		}
		ids := tokenize(text, nil)
		total += len(ids)
		score := float64(splitmix(q^digestIDs(ids))%1000000) / 1e6
		res[i] = rerankResult{Index: i, Document: map[string]string{"text": text}, RelevanceScore: score}
	}
	sort.SliceStable(res, func(a, b int) bool { return res[a].RelevanceScore > res[b].RelevanceScore })
	if req.TopN > 0 && req.TopN < len(res) {
		res = res[:req.TopN]
	}
	b, _ := json.Marshal(map[string]any{"id": "rerank-" + s.idPrefix + itoa(int(s.seq.Add(1))), "model": s.cfg.Model,
		"usage": map[string]int{"total_tokens": total}, "results": res})
	o.body(b)
}
