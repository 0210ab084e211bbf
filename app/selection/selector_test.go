package selection_test

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/selection"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/policy"
	"github.com/smg-go/smg/domain/worker"
)

const (
	nixl     = "NixlConnector"
	mooncake = "MooncakeConnector"
)

func newSel(t *testing.T, mode pairing.Mode, ws ...*worker.Live) (*fakeStore, *selection.Selector, *logSink) {
	t.Helper()
	st := &fakeStore{}
	for _, w := range ws {
		require.NoError(t, st.Add(w))
	}
	sink := &logSink{}
	return st, selection.New(st, mode, &roundRobin{}, &roundRobin{}, slog.New(sink)), sink
}

func requireErr(t *testing.T, err error, status int, code, msg, leg string) {
	t.Helper()
	e, ok := errs.As(err)
	require.True(t, ok, "want *errs.Error, got %v", err)
	assert.Equal(t, status, e.Status)
	assert.Equal(t, code, e.Code)
	assert.Equal(t, msg, e.Message)
	assert.Equal(t, leg, e.Leg)
}

func TestSelectOnlyCompatiblePairs(t *testing.T) {
	t.Parallel()
	ws := []*worker.Live{
		vw("http://pn1:8000", worker.RolePrefill, nixl, nil),
		vw("http://pm1:8000", worker.RolePrefill, mooncake, nil),
		vw("http://pn2:8000", worker.RolePrefill, nixl, nil),
		vw("http://dm1:8000", worker.RoleDecode, mooncake, nil),
		vw("http://dn1:8000", worker.RoleDecode, nixl, nil),
		vw("http://dn2:8000", worker.RoleDecode, nixl, nil),
		vw("http://dm2:8000", worker.RoleDecode, mooncake, nil),
		vw("http://r:8000", worker.RoleRegular, "", nil),
	}
	_, sel, _ := newSel(t, pairing.ModeLenient, ws...)
	seen := map[string]int{}
	for range 120 {
		p, d, release, err := sel.Select(&policy.Request{Model: "m"})
		require.NoError(t, err)
		ok, diffs := pairing.Compatible(pairing.Describe(p.Worker), pairing.Describe(d.Worker), pairing.ModeLenient)
		require.True(t, ok, "%s -> %s: %v", p.URL, d.URL, diffs)
		assert.Equal(t, int64(1), p.Load())
		assert.Equal(t, int64(1), d.Load())
		release()
		release() // idempotent
		assert.Equal(t, int64(0), p.Load())
		assert.Equal(t, int64(0), d.Load())
		seen[p.URL+" "+d.URL]++
	}
	// Every compatible pair is used; no other.
	assert.ElementsMatch(t, []string{
		"http://pn1:8000 http://dn1:8000", "http://pn1:8000 http://dn2:8000",
		"http://pn2:8000 http://dn1:8000", "http://pn2:8000 http://dn2:8000",
		"http://pm1:8000 http://dm1:8000", "http://pm1:8000 http://dm2:8000",
	}, keys(seen))
}

func keys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

func TestSelectSkipsPrefillWithoutCompatibleDecode(t *testing.T) {
	t.Parallel()
	lonely := vw("http://lonely:8000", worker.RolePrefill, nixl, nil)
	unhealthyPeer := vw("http://p-moriio:8000", worker.RolePrefill, "MoRIIOConnector", nil)
	good := vw("http://good:8000", worker.RolePrefill, mooncake, nil)
	down := vw("http://d-moriio:8000", worker.RoleDecode, "MoRIIOConnector", nil)
	down.SetStatus(worker.StatusNotReady)
	d := vw("http://d:8000", worker.RoleDecode, mooncake, nil)
	_, sel, sink := newSel(t, pairing.ModeStrict, lonely, unhealthyPeer, good, down, d)
	for range 10 {
		p, dd, release, err := sel.Select(nil)
		require.NoError(t, err)
		assert.Equal(t, "http://good:8000", p.URL)
		assert.Equal(t, "http://d:8000", dd.URL)
		release()
	}
	assert.Empty(t, sink.warnings())
}

func TestSelectErrors(t *testing.T) {
	t.Parallel()
	noPrefill := "No available prefill workers (all unhealthy or circuits open). Please check if prefill servers are configured and healthy."
	noDecode := "No available decode workers (all unhealthy or circuits open). Please check if decode servers are configured and healthy."
	sick := func(l *worker.Live) *worker.Live { l.SetStatus(worker.StatusFailed); return l }
	cases := []struct {
		name    string
		mode    pairing.Mode
		ws      []*worker.Live
		model   string
		code    string
		message string
		leg     string
	}{
		{name: "empty fleet names prefill", mode: pairing.ModeLenient,
			code: "no_available_workers", message: noPrefill, leg: "prefill"},
		{name: "no decode worker", mode: pairing.ModeLenient,
			ws:   []*worker.Live{vw("http://p:8000", worker.RolePrefill, nixl, nil)},
			code: "no_available_workers", message: noDecode, leg: "decode"},
		{name: "prefills all unhealthy", mode: pairing.ModeLenient,
			ws:   []*worker.Live{sick(vw("http://p:8000", worker.RolePrefill, nixl, nil)), vw("http://d:8000", worker.RoleDecode, nixl, nil)},
			code: "no_available_workers", message: noPrefill, leg: "prefill"},
		{name: "decodes all unhealthy, even if incompatible", mode: pairing.ModeLenient,
			ws:   []*worker.Live{vw("http://p:8000", worker.RolePrefill, nixl, nil), sick(vw("http://d:8000", worker.RoleDecode, mooncake, nil))},
			code: "no_available_workers", message: noDecode, leg: "decode"},
		{name: "no decode serves the model", mode: pairing.ModeLenient, model: "llama",
			ws:   []*worker.Live{vw("http://p:8000", worker.RolePrefill, nixl, nil), vw("http://d:8000", worker.RoleDecode, nixl, nil, "qwen")},
			code: "no_available_workers", message: noDecode, leg: "decode"},
		{name: "NIXL prefill with Mooncake decode", mode: pairing.ModeLenient,
			ws:   []*worker.Live{vw("http://p:8000", worker.RolePrefill, nixl, nil), vw("http://d:8000", worker.RoleDecode, mooncake, nil)},
			code: "no_compatible_pd_pair",
			message: "no prefill worker shares a KV transfer protocol with any decode worker: " +
				"prefill http://p:8000 [vllm/nixl/?] vs decode http://d:8000 [vllm/mooncake/?] differ in transport"},
		{name: "strict refuses an HTTP fleet without connectors", mode: pairing.ModeStrict,
			ws:   []*worker.Live{vw("http://p:8000", worker.RolePrefill, "", nil), vw("http://d:8000", worker.RoleDecode, "", nil)},
			code: "no_compatible_pd_pair",
			message: "no prefill worker shares a KV transfer protocol with any decode worker: " +
				"prefill http://p:8000 [vllm/?/?] vs decode http://d:8000 [vllm/?/?] differ in transport"},
		{name: "only the compatible decode is unhealthy", mode: pairing.ModeLenient,
			ws: []*worker.Live{vw("http://p:8000", worker.RolePrefill, nixl, nil),
				sick(vw("http://dn:8000", worker.RoleDecode, nixl, nil)), vw("http://dm:8000", worker.RoleDecode, mooncake, nil)},
			code: "no_compatible_pd_pair",
			message: "no prefill worker shares a KV transfer protocol with any decode worker: " +
				"prefill http://p:8000 [vllm/nixl/?] vs decode http://dm:8000 [vllm/mooncake/?] differ in transport"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, sel, sink := newSel(t, tc.mode, tc.ws...)
			p, d, release, err := sel.Select(&policy.Request{Model: tc.model})
			assert.Nil(t, p)
			assert.Nil(t, d)
			assert.Nil(t, release)
			requireErr(t, err, 503, tc.code, tc.message, tc.leg)
			if tc.code == "no_compatible_pd_pair" {
				assert.Equal(t, []string{tc.message}, sink.warnings())
			} else {
				assert.Empty(t, sink.warnings())
			}
			for _, w := range tc.ws {
				assert.Zero(t, w.Load(), w.URL)
			}
		})
	}
}

func TestSelectOffModePairsEverything(t *testing.T) {
	t.Parallel()
	_, sel, _ := newSel(t, pairing.ModeOff,
		vw("http://p:8000", worker.RolePrefill, nixl, nil), vw("http://d:8000", worker.RoleDecode, mooncake, nil))
	p, d, release, err := sel.Select(nil)
	require.NoError(t, err)
	assert.Equal(t, "http://p:8000", p.URL)
	assert.Equal(t, "http://d:8000", d.URL)
	release()
}

func TestSelectFollowsStoreChangesAndWarnsOncePerVersion(t *testing.T) {
	t.Parallel()
	p := vw("http://p:8000", worker.RolePrefill, nixl, nil)
	st, sel, sink := newSel(t, pairing.ModeLenient, p, vw("http://dm:8000", worker.RoleDecode, mooncake, nil))
	for range 5 {
		_, _, _, err := sel.Select(nil)
		requireErr(t, err, 503, "no_compatible_pd_pair",
			"no prefill worker shares a KV transfer protocol with any decode worker: prefill http://p:8000 [vllm/nixl/?] vs decode http://dm:8000 [vllm/mooncake/?] differ in transport", "")
	}
	assert.Len(t, sink.warnings(), 1, "one warning per matrix version")

	// A regular worker does not touch the matrix.
	before := sel.Matrix()
	require.NoError(t, st.Add(vw("http://r:8000", worker.RoleRegular, "", nil)))
	assert.Same(t, before, sel.Matrix())

	// A new incompatible decode is a new version: warned again.
	require.NoError(t, st.Add(vw("http://dm2:8000", worker.RoleDecode, mooncake, nil)))
	_, _, _, err := sel.Select(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "decode http://dm:8000 (+1 more) [vllm/mooncake/?]")
	assert.Len(t, sink.warnings(), 2)

	// Adding a compatible decode makes requests succeed, on that decode only.
	dn := vw("http://dn:8000", worker.RoleDecode, nixl, nil)
	require.NoError(t, st.Add(dn))
	for range 3 {
		gp, gd, release, err := sel.Select(nil)
		require.NoError(t, err)
		assert.Same(t, p, gp)
		assert.Same(t, dn, gd)
		release()
	}

	// Its failure and removal are seen at once.
	st.SetStatus(dn, worker.StatusNotReady)
	_, _, _, err = sel.Select(nil)
	requireErr(t, err, 503, "no_compatible_pd_pair", pairing.Explain([]*worker.Live{p}, st.ByRole(worker.RoleDecode)[:2], pairing.ModeLenient), "")
	st.SetStatus(dn, worker.StatusReady)
	_, _, release, err := sel.Select(nil)
	require.NoError(t, err)
	release()
	_, err = st.Remove(dn.ID)
	require.NoError(t, err)
	_, _, _, err = sel.Select(nil)
	requireErr(t, err, 503, "no_compatible_pd_pair", pairing.Explain([]*worker.Live{p}, st.ByRole(worker.RoleDecode), pairing.ModeLenient), "")
	assert.Nil(t, sel.Matrix().CompatibleDecodes(p))
}

func TestSelectModelFiltering(t *testing.T) {
	t.Parallel()
	pq := vw("http://pq:8000", worker.RolePrefill, nixl, nil, "qwen")
	pl := vw("http://pl:8000", worker.RolePrefill, nixl, nil, "llama")
	dq := vw("http://dq:8000", worker.RoleDecode, nixl, nil, "qwen")
	dany := vw("http://dany:8000", worker.RoleDecode, mooncake, nil)
	_, sel, _ := newSel(t, pairing.ModeLenient, pq, pl, dq, dany)
	for range 4 {
		p, d, release, err := sel.Select(&policy.Request{Model: "qwen"})
		require.NoError(t, err)
		assert.Same(t, pq, p)
		assert.Same(t, dq, d)
		release()
	}
	// llama: the only decode serving it (wildcard) speaks Mooncake.
	_, _, _, err := sel.Select(&policy.Request{Model: "llama"})
	requireErr(t, err, 503, "no_compatible_pd_pair",
		"no prefill worker shares a KV transfer protocol with any decode worker: prefill http://pl:8000 [vllm/nixl/?] vs decode http://dany:8000 [vllm/mooncake/?] differ in transport", "")
}

func TestSelectPolicyRefusal(t *testing.T) {
	t.Parallel()
	st := &fakeStore{}
	p := vw("http://p:8000", worker.RolePrefill, nixl, nil)
	require.NoError(t, st.Add(p))
	require.NoError(t, st.Add(vw("http://d:8000", worker.RoleDecode, nixl, nil)))

	sel := selection.New(st, pairing.ModeLenient, refuse{}, &roundRobin{}, nil)
	_, _, _, err := sel.Select(nil)
	requireErr(t, err, 503, "no_available_workers", "Policy bucket failed to select a prefill worker", "prefill")
	_, _, err = sel.SelectPrefillOnly(nil)
	requireErr(t, err, 503, "no_available_workers", "Policy bucket failed to select a prefill worker", "prefill")

	sel = selection.New(st, pairing.ModeLenient, &roundRobin{}, refuse{}, nil)
	_, _, _, err = sel.Select(nil)
	requireErr(t, err, 503, "no_available_workers", "Policy bucket failed to select a decode worker", "decode")
	assert.Zero(t, p.Load(), "the prefill slot is released when the decode pick fails")
}

func TestSelectPrefillOnly(t *testing.T) {
	t.Parallel()
	lonely := vw("http://lonely:8000", worker.RolePrefill, nixl, nil, "m")
	st, sel, _ := newSel(t, pairing.ModeStrict, lonely)
	m := &fakeMetrics{}
	sel.SetMetrics(m)
	p, release, err := sel.SelectPrefillOnly(&policy.Request{Model: "m"})
	require.NoError(t, err)
	assert.Same(t, lonely, p, "count_tokens needs no decode, so pairing does not matter")
	assert.Equal(t, int64(1), p.Load())
	release()
	assert.Zero(t, p.Load())
	assert.Equal(t, []string{"prefill/http/m/round_robin"}, m.sels)

	_, _, err = sel.SelectPrefillOnly(&policy.Request{Model: "other"})
	requireErr(t, err, 503, "no_available_workers",
		"No available prefill workers (all unhealthy or circuits open). Please check if prefill servers are configured and healthy.", "prefill")
	st.SetStatus(lonely, worker.StatusDraining)
	_, _, err = sel.SelectPrefillOnly(&policy.Request{Model: "m"})
	require.Error(t, err)
}

func TestSelectRecordsMetrics(t *testing.T) {
	t.Parallel()
	_, sel, _ := newSel(t, pairing.ModeLenient,
		vw("http://p:8000", worker.RolePrefill, nixl, nil), vw("http://d:8000", worker.RoleDecode, nixl, nil))
	_, _, release, err := sel.Select(&policy.Request{Model: "m"})
	require.NoError(t, err)
	release()
	m := &fakeMetrics{}
	sel.SetMetrics(m)
	_, _, release, err = sel.Select(&policy.Request{Model: "m"})
	require.NoError(t, err)
	release()
	assert.Equal(t, []string{"prefill/http/m/round_robin", "decode/http/m/round_robin"}, m.sels)
	sel.SetMetrics(nil)
	_, _, release, err = sel.Select(&policy.Request{Model: "m"})
	require.NoError(t, err)
	release()
	assert.Len(t, m.sels, 2)
}

func TestPairingKey(t *testing.T) {
	t.Parallel()
	w := worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: nixl, Labels: map[string]string{
		"kv_cache_dtype": "auto", "block_size": "16", "attention_backend": "flash_attn", "model_dtype": "torch.bfloat16"}}
	assert.Equal(t, "vllm/nixl/dtype=auto,page=16,attn=flash_attn,model=torch.bfloat16", selection.PairingKey(w))
	w.Labels["pairing_protocol"] = "shared-v1"
	assert.Equal(t, "shared-v1", selection.PairingKey(w))
}

func TestSelectAvoidsWorkersThatFailedThisRequest(t *testing.T) {
	t.Parallel()
	_, sel, _ := newSel(t, pairing.ModeLenient,
		vw("http://p1:8000", worker.RolePrefill, nixl, nil),
		vw("http://p2:8000", worker.RolePrefill, nixl, nil),
		vw("http://d1:8000", worker.RoleDecode, nixl, nil),
		vw("http://d2:8000", worker.RoleDecode, nixl, nil),
	)
	for range 8 {
		p, d, release, err := sel.Select(&policy.Request{Model: "m", Avoid: []string{"http://p1:8000", "http://d2:8000"}})
		require.NoError(t, err)
		assert.Equal(t, "http://p2:8000", p.URL, "the failed prefill is left out")
		assert.Equal(t, "http://d1:8000", d.URL, "the failed decode is left out")
		release()
	}
	// When every worker of a leg failed already, the retry still goes to one of them.
	p, d, release, err := sel.Select(&policy.Request{Model: "m", Avoid: []string{"http://d1:8000", "http://d2:8000"}})
	require.NoError(t, err)
	assert.NotNil(t, p)
	assert.Contains(t, []string{"http://d1:8000", "http://d2:8000"}, d.URL)
	release()
}

// A retry after a timeout where neither leg answered keeps the decode and changes the
// prefill; a pin on a decode that cannot serve (or pairs with no available prefill) is
// ignored.
func TestSelectKeepsAPinnedDecode(t *testing.T) {
	t.Parallel()
	_, sel, _ := newSel(t, pairing.ModeLenient,
		vw("http://p1:8000", worker.RolePrefill, nixl, nil),
		vw("http://p2:8000", worker.RolePrefill, nixl, nil),
		vw("http://d1:8000", worker.RoleDecode, nixl, nil),
		vw("http://d2:8000", worker.RoleDecode, nixl, nil),
	)
	for range 8 {
		p, d, release, err := sel.Select(&policy.Request{Model: "m", PinDecode: "http://d2:8000", Avoid: []string{"http://p2:8000"}})
		require.NoError(t, err)
		assert.Equal(t, "http://p1:8000", p.URL)
		assert.Equal(t, "http://d2:8000", d.URL, "the pinned decode, whatever the policy's turn")
		release()
	}
	seen := map[string]bool{}
	for range 4 {
		_, d, release, err := sel.Select(&policy.Request{Model: "m", PinDecode: "http://gone:8000"})
		require.NoError(t, err)
		seen[d.URL] = true
		release()
	}
	assert.Len(t, seen, 2, "an unknown pin is ignored: the policy picks")
}
