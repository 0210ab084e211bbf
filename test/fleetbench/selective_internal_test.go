package fleetbench

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSelectivePDCells(t *testing.T) {
	t.Parallel()
	ns, err := ParseSelectivePD(" 0, 256 ,")
	require.NoError(t, err)
	assert.Equal(t, []int{0, 256}, ns)
	_, err = ParseSelectivePD("-1")
	require.Error(t, err)
	assert.Equal(t, []selectiveCell{{}}, selectiveCells(nil), "no flag: one plain cell")
	cs := selectiveCells(ns)
	require.Len(t, cs, 2)
	assert.Equal(t, selectiveCell{args: []string{"--selective-pd-uncached-tokens=256"}, kvRole: "kv_both", label: " spd=256"}, cs[1])
}

func TestSummariseCountsDecodeOnlyApartFromRecomputes(t *testing.T) {
	t.Parallel()
	c := Summarise("mixed", "cache_aware spd=256", 1, nil, 0, []WorkerStats{
		{Role: "decode", RecomputedPrompts: 5, DecodeOnlyRequests: 4},
		{Role: "decode", RecomputedPrompts: 1},
	})
	assert.Equal(t, int64(2), c.Recomputes)
	assert.Equal(t, int64(4), c.DecodeOnly)
}

func TestWorkersFileRegistersDecodesKVBoth(t *testing.T) {
	t.Parallel()
	f := &Fleet{dir: t.TempDir(), Prefills: []*Sim{{URL: "http://127.0.0.1:1"}}, Decodes: []*Sim{{URL: "http://127.0.0.1:2"}}}
	p, err := f.writeWorkersFile("vllm", TransportHTTP, "kv_both", 0)
	require.NoError(t, err)
	b, err := readFile(p)
	require.NoError(t, err)
	assert.Contains(t, b, `"url":"http://127.0.0.1:2","worker_type":"decode","kv_connector":"NixlConnector","kv_role":"kv_both"`)
	assert.NotContains(t, b, `"worker_type":"prefill","kv_connector":"NixlConnector","kv_role"`)
}

func readFile(p string) (string, error) {
	b, err := os.ReadFile(p)
	return string(b), err
}

func TestParseVariant(t *testing.T) {
	v, err := ParseVariant("events=--kv-events-routing=true  --kv-overlap-weight=8")
	require.NoError(t, err)
	assert.Equal(t, Variant{Label: "events", Args: []string{"--kv-events-routing=true", "--kv-overlap-weight=8"}}, v)
	assert.Equal(t, " events", v.label())
	v, err = ParseVariant("plain=")
	require.NoError(t, err)
	assert.Empty(t, v.Args)
	for _, bad := range []string{"=--x", "no-equals", "two words=--x", "l=value"} {
		_, err := ParseVariant(bad)
		assert.Error(t, err, bad)
	}
	assert.Equal(t, []Variant{{}}, variants(nil))

	vs, err := ParseVariants([]string{"a=--x=1", "b="})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, []string{vs[0].Label, vs[1].Label})
	_, err = ParseVariants([]string{"a=--x=1", "b=", " a =--x=2"})
	assert.ErrorContains(t, err, `share the label "a"`)
	_, err = ParseVariants([]string{"a=--x=1", "no-equals"})
	assert.Error(t, err)
}
