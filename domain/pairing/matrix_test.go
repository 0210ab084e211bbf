package pairing_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

func live(url string, role worker.Role, connector string, labels map[string]string) *worker.Live {
	return worker.NewLive(worker.Worker{ID: url, URL: url, Role: role, Runtime: worker.RuntimeVLLM,
		Mode: worker.ConnHTTP, KVConnector: connector, Labels: labels}, worker.StatusReady)
}

func urls(ls []*worker.Live) []string {
	out := make([]string, 0, len(ls))
	for _, l := range ls {
		out = append(out, l.URL)
	}
	return out
}

func TestMatrixGroupsAndCompatibleDecodes(t *testing.T) {
	t.Parallel()
	p1 := live("http://p1:8000", worker.RolePrefill, "NixlConnector", nil)
	p2 := live("http://p2:8000", worker.RolePrefill, "MooncakeConnector", nil)
	p3 := live("http://p3:8000", worker.RolePrefill, "NixlConnector", nil)
	p4 := live("http://p4:8000", worker.RolePrefill, "MoRIIOConnector", nil)
	d1 := live("http://d1:8000", worker.RoleDecode, "MooncakeConnector", nil)
	d2 := live("http://d2:8000", worker.RoleDecode, "NixlConnector", nil)
	d3 := live("http://d3:8000", worker.RoleDecode, "", nil) // unknown transport: pairs under lenient
	d4 := live("http://d4:8000", worker.RoleDecode, "NixlConnector", nil)

	mx := pairing.NewMatrix([]*worker.Live{p1, p2, p3, p4}, []*worker.Live{d1, d2, d3, d4}, pairing.ModeLenient)
	assert.Equal(t, pairing.ModeLenient, mx.Mode())
	assert.Equal(t, []string{"http://d2:8000", "http://d3:8000", "http://d4:8000"}, urls(mx.CompatibleDecodes(p1)))
	assert.Equal(t, []string{"http://d1:8000", "http://d3:8000"}, urls(mx.CompatibleDecodes(p2)))
	assert.Equal(t, urls(mx.CompatibleDecodes(p1)), urls(mx.CompatibleDecodes(p3)))
	assert.Equal(t, []string{"http://d3:8000"}, urls(mx.CompatibleDecodes(p4)))
	assert.Nil(t, mx.CompatibleDecodes(d1), "a decode is not a prefill of the matrix")

	require.Len(t, mx.Groups(), 3)
	assert.Equal(t, "vllm/nixl/?", mx.Groups()[0].Key)
	assert.Equal(t, []string{"http://p1:8000", "http://p3:8000"}, urls(mx.Groups()[0].Prefills))
	assert.Len(t, mx.Pairable(), 3)

	strict := pairing.NewMatrix([]*worker.Live{p1, p2, p3, p4}, []*worker.Live{d1, d2, d3, d4}, pairing.ModeStrict)
	assert.Equal(t, []string{"http://d2:8000", "http://d4:8000"}, urls(strict.CompatibleDecodes(p1)))
	assert.Nil(t, strict.CompatibleDecodes(p4), "strict: MoRI-IO prefill has no MoRI-IO decode")
	require.Len(t, strict.Pairable(), 2)
	assert.Equal(t, []string{"vllm/nixl/?", "vllm/mooncake/?"}, []string{strict.Pairable()[0].Key, strict.Pairable()[1].Key})

	off := pairing.NewMatrix([]*worker.Live{p1, p4}, []*worker.Live{d1, d2}, pairing.ModeOff)
	assert.Equal(t, []string{"http://d1:8000", "http://d2:8000"}, urls(off.CompatibleDecodes(p4)))
}

func TestMatrixEmptyAndNil(t *testing.T) {
	t.Parallel()
	mx := pairing.NewMatrix(nil, nil, pairing.ModeStrict)
	assert.Empty(t, mx.Groups())
	assert.Empty(t, mx.Pairable())
	mx = pairing.NewMatrix([]*worker.Live{nil, live("http://p:1", worker.RolePrefill, "NixlConnector", nil)},
		[]*worker.Live{nil}, pairing.ModeLenient)
	require.Len(t, mx.Groups(), 1)
	assert.Empty(t, mx.Pairable())
}

func TestExplain(t *testing.T) {
	t.Parallel()
	p := live("http://p:8000", worker.RolePrefill, "NixlConnector", nil)
	d := live("http://d:8000", worker.RoleDecode, "MooncakeConnector", nil)
	assert.Equal(t,
		"no prefill worker shares a KV transfer protocol with any decode worker: prefill http://p:8000 [vllm/nixl/?] vs decode http://d:8000 [vllm/mooncake/?] differ in transport",
		pairing.Explain([]*worker.Live{p}, []*worker.Live{d}, pairing.ModeLenient))

	mx := pairing.NewMatrix([]*worker.Live{p}, []*worker.Live{d}, pairing.ModeStrict)
	assert.Equal(t, pairing.Explain([]*worker.Live{p}, []*worker.Live{d}, pairing.ModeStrict), mx.Explain())

	// Several components, several workers per key, protocol keys.
	p2 := live("http://p2:8000", worker.RolePrefill, "NixlConnector", nil)
	dl := live("http://d2:8000", worker.RoleDecode, "NixlConnector", map[string]string{"kv_cache_dtype": "fp8", "pairing_protocol": "x"})
	pp := live("http://p3:8000", worker.RolePrefill, "NixlConnector", map[string]string{"kv_cache_dtype": "auto", "pairing_protocol": "y"})
	got := pairing.Explain([]*worker.Live{p, p2, pp}, []*worker.Live{dl}, pairing.ModeStrict)
	assert.Equal(t,
		"no prefill worker shares a KV transfer protocol with any decode worker: "+
			"prefill http://p:8000 (+1 more) [vllm/nixl/?] vs decode http://d2:8000 [x] differ in pairing_protocol; "+
			"prefill http://p3:8000 [y] vs decode http://d2:8000 [x] differ in pairing_protocol", got)

	assert.Equal(t, pairing.ExplainPrefix, pairing.Explain(nil, []*worker.Live{d}, pairing.ModeLenient))
	// Compatible combinations are not listed.
	assert.Equal(t, pairing.ExplainPrefix, pairing.Explain([]*worker.Live{p}, []*worker.Live{p2}, pairing.ModeLenient))

	err := pairing.NoCompatiblePairError("msg")
	assert.Equal(t, 503, err.Status)
	assert.Equal(t, "no_compatible_pd_pair", err.Code)
	assert.Equal(t, "msg", err.Message)
	assert.False(t, err.Retryable)
}

func TestExplainBoundedForLargeFleets(t *testing.T) {
	t.Parallel()
	var ps, ds []*worker.Live
	for i := range 500 {
		// 50 distinct prefill layouts and 50 distinct decode layouts, none pairing.
		ps = append(ps, live(fmt.Sprintf("http://p%d:8000", i), worker.RolePrefill, "NixlConnector",
			map[string]string{"page_size": fmt.Sprint(i % 50), "attention_backend": strings.Repeat("a", 300)}))
		ds = append(ds, live(fmt.Sprintf("http://d%d:8000", i), worker.RoleDecode, "MooncakeConnector",
			map[string]string{"page_size": fmt.Sprint(100 + i%50)}))
	}
	got := pairing.Explain(ps, ds, pairing.ModeLenient)
	assert.Less(t, len(got), 1200)
	assert.True(t, strings.HasSuffix(got, "; and 2497 more combinations"), got)
	assert.Contains(t, got, "prefill http://p0:8000 (+9 more) [vllm/nixl/page=0,attn=aaaa")
	assert.Contains(t, got, "...] vs decode http://d0:8000 (+9 more) [vllm/mooncake/page=100] differ in transport, page_size")
}

func TestMatrixExplainWhereMatchesExplain(t *testing.T) {
	t.Parallel()
	var ps, ds []*worker.Live
	for i := range 12 {
		ps = append(ps, live(fmt.Sprintf("http://p%d:8000", i), worker.RolePrefill, []string{"NixlConnector", "MooncakeConnector", ""}[i%3],
			map[string]string{"page_size": fmt.Sprint(i % 2)}))
		ds = append(ds, live(fmt.Sprintf("http://d%d:8000", i), worker.RoleDecode, []string{"MoRIIOConnector", "LMCacheConnectorV1"}[i%2],
			map[string]string{"version": fmt.Sprint(i % 4)}))
	}
	// Dropping workers that are not the first of their descriptor keeps the group order.
	keep := func(l *worker.Live) bool { return l.URL != "http://p7:8000" && l.URL != "http://d3:8000" }
	var kp, kd []*worker.Live
	for _, l := range ps {
		if keep(l) {
			kp = append(kp, l)
		}
	}
	for _, l := range ds {
		if keep(l) {
			kd = append(kd, l)
		}
	}
	for _, m := range []pairing.Mode{pairing.ModeLenient, pairing.ModeStrict} {
		mx := pairing.NewMatrix(ps, ds, m)
		assert.Equal(t, pairing.Explain(kp, kd, m), mx.ExplainWhere(keep), m)
		assert.Equal(t, pairing.Explain(ps, ds, m), mx.Explain(), m)
		assert.Contains(t, mx.ExplainWhere(keep), "prefill http://p0:8000 (+1 more) [vllm/nixl/page=0] vs decode http://d0:8000 (+2 more) [vllm/moriio/?]", m)
		assert.Contains(t, mx.ExplainWhere(keep), "vs decode http://d1:8000 (+2 more) [vllm/lmcacheconnectorv1/?]", m)
		// When a group's first worker is dropped, the next kept one stands for the group.
		assert.Contains(t, mx.ExplainWhere(func(l *worker.Live) bool { return l.URL != "http://p0:8000" }),
			"prefill http://p6:8000 [vllm/nixl/page=0] vs decode http://d0:8000 (+2 more) [vllm/moriio/?]", m)
	}
	assert.Equal(t, pairing.ExplainPrefix, pairing.NewMatrix(ps, ds, pairing.ModeStrict).ExplainWhere(func(*worker.Live) bool { return false }))
}
