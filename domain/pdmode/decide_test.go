package pdmode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/worker"
)

func TestDecideThresholdEdges(t *testing.T) {
	t.Parallel()
	c := pdmode.Config{UncachedTokens: 256}
	cases := []struct {
		name          string
		prompt, cache int
		want          pdmode.Decision
		reason        string
	}{
		{"uncached exactly N is decode-only", 256, 0, pdmode.DecodeOnly, pdmode.ReasonUncachedBelow},
		{"uncached N+1 is disaggregated", 257, 0, pdmode.Disaggregated, pdmode.ReasonUncachedAbove},
		{"a long prompt cached down to N is decode-only", 4096, 4096 - 256, pdmode.DecodeOnly, pdmode.ReasonUncachedBelow},
		{"a long prompt cached down to N+1 is disaggregated", 4096, 4096 - 257, pdmode.Disaggregated, pdmode.ReasonUncachedAbove},
		{"cached beyond the prompt counts as 0 uncached", 10, 50, pdmode.DecodeOnly, pdmode.ReasonUncachedBelow},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d, r, i := c.Decide(pdmode.Input{PromptTokens: tc.prompt, PrefillMinLoad: 0,
				Candidates: []pdmode.Candidate{{Cached: tc.cache}}})
			assert.Equal(t, tc.want, d)
			assert.Equal(t, tc.reason, r)
			if d == pdmode.DecodeOnly {
				assert.Equal(t, 0, i)
			} else {
				assert.Equal(t, -1, i)
			}
		})
	}
}

func TestDecideChoosesFewestUncachedThenLoad(t *testing.T) {
	t.Parallel()
	c := pdmode.Config{UncachedTokens: 100}
	in := pdmode.Input{PromptTokens: 1000, Candidates: []pdmode.Candidate{
		{Cached: 0, Load: 0}, {Cached: 950, Load: 5}, {Cached: 950, Load: 2}}}
	d, _, i := c.Decide(in)
	assert.Equal(t, pdmode.DecodeOnly, d)
	assert.Equal(t, 2, i, "most cached, then least loaded")
}

func TestDecideDecodeGuardEdges(t *testing.T) {
	t.Parallel()
	c := pdmode.Config{UncachedTokens: 100, DecodeMaxRequests: 4}
	d, r, _ := c.Decide(pdmode.Input{PromptTokens: 10, Candidates: []pdmode.Candidate{{Load: 4}}})
	assert.Equal(t, []string{string(pdmode.Disaggregated), pdmode.ReasonDecodeBusy}, []string{string(d), r}, "at the guard")
	d, r, _ = c.Decide(pdmode.Input{PromptTokens: 10, Candidates: []pdmode.Candidate{{Load: 4}, {Load: 3}}})
	assert.Equal(t, []string{string(pdmode.DecodeOnly), pdmode.ReasonUncachedBelow}, []string{string(d), r}, "one under the guard")
}

func TestDecidePrefillBusyEdges(t *testing.T) {
	t.Parallel()
	c := pdmode.Config{PrefillBusyRequests: 8}
	in := pdmode.Input{PromptTokens: 5000, Candidates: []pdmode.Candidate{{}}, PrefillMinLoad: 7}
	d, r, _ := c.Decide(in)
	assert.Equal(t, []string{string(pdmode.Disaggregated), pdmode.ReasonUncachedAbove}, []string{string(d), r}, "below busy")
	in.PrefillMinLoad = 8
	d, r, _ = c.Decide(in)
	assert.Equal(t, []string{string(pdmode.DecodeOnly), pdmode.ReasonPrefillBusy}, []string{string(d), r}, "at busy")
	assert.False(t, pdmode.Config{}.Enabled())
	assert.True(t, c.Enabled())
}

func TestDecideNoCandidate(t *testing.T) {
	t.Parallel()
	d, r, i := pdmode.Config{UncachedTokens: 1 << 20}.Decide(pdmode.Input{PromptTokens: 1})
	assert.Equal(t, []any{pdmode.Disaggregated, pdmode.ReasonNoLocalWorker, -1}, []any{d, r, i})
}

func TestCanServeAlone(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		w    worker.Worker
		want bool
	}{
		{"vLLM kv_both NIXL decode", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVRole: "kv_both", KVConnector: "NixlConnector"}, true},
		{"vLLM kv_consumer decode", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVRole: "kv_consumer"}, false},
		{"vLLM decode without kv_role", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM}, false},
		{"SGLang PD decode", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeSGLang, KVRole: "kv_both"}, false},
		{"TokenSpeed decode", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeTokenSpeed, KVRole: "kv_both"}, false},
		{"TokenSpeed regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeTokenSpeed}, false},
		{"MoRI-IO kv_both decode", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVRole: "kv_both", KVConnector: "MoRIIOConnector"}, false},
		{"HTTP SGLang regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP}, true},
		{"gRPC SGLang regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnGRPC}, false},
		{"gRPC vLLM regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeVLLM, Mode: worker.ConnGRPC}, true},
		{"prefill", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVRole: "kv_both"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, pdmode.CanServeAlone(&tc.w))
		})
	}
}
