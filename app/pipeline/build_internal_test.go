package pipeline

import (
	"math"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func live(rt worker.Runtime, role worker.Role, labels map[string]string) *worker.Live {
	bp := 9000
	return worker.NewLive(worker.Worker{ID: string(role), URL: "grpc://127.0.0.1:1", Role: role, Runtime: rt, Mode: worker.ConnGRPC,
		Labels: labels, BootstrapPort: &bp}, worker.StatusReady)
}

func testJob(route handoff.Route, n int, seed *int64, prompts ...string) *job {
	j := &job{rq: &handoff.Request{Route: route, N: n}, n: n, sampling: ports.GRPCSampling{Seed: seed}}
	for _, p := range prompts {
		j.prompts = append(j.prompts, prompt{text: p, ids: []uint32{1, 2, 3}})
	}
	j.batch = len(prompts) > 1
	return j
}

func TestPlanTokenSpeedFanout(t *testing.T) {
	pl := New(Deps{Config: config.Default()})
	seed := int64(7)
	p, d := live(worker.RuntimeTokenSpeed, worker.RolePrefill, nil), live(worker.RuntimeTokenSpeed, worker.RoleDecode, nil)
	us := pl.plan(testJob(handoff.RouteChat, 3, &seed, "x"), parallelTokenSpeed, "req", p, d)
	require.Len(t, us, 3)
	rooms := map[int64]bool{}
	for i, u := range us {
		assert.Equal(t, "req-"+string(rune('0'+i)), u.pLeg.RequestID)
		assert.Equal(t, u.pLeg.RequestID, u.dLeg.RequestID, "both legs share the id")
		assert.EqualValues(t, 7+i, *u.dLeg.Sampling.Seed, "seeds 7/8/9")
		assert.EqualValues(t, 1, u.dLeg.Sampling.N)
		assert.Equal(t, i, u.index)
		require.NotNil(t, u.pLeg.Rendezvous)
		assert.Equal(t, u.pLeg.Rendezvous, u.dLeg.Rendezvous)
		assert.Equal(t, 9000, u.dLeg.Rendezvous.Port)
		assert.Equal(t, "127.0.0.1", u.dLeg.Rendezvous.Host)
		assert.Nil(t, u.dLeg.DPRank, "TokenSpeed places by room residue, no pin")
		rooms[u.dLeg.Rendezvous.Room] = true
	}
	assert.Len(t, rooms, 3, "one room per sample")
	assert.EqualValues(t, 7, seed, "the request's seed is not modified")

	unset := pl.plan(testJob(handoff.RouteChat, 2, nil, "x"), parallelTokenSpeed, "req", p, d)
	for _, u := range unset {
		assert.Nil(t, u.dLeg.Sampling.Seed, "an unset seed stays unset")
	}
}

func TestPlanBatchAndVLLM(t *testing.T) {
	pl := New(Deps{Config: config.Default()})
	p, d := live(worker.RuntimeSGLang, worker.RolePrefill, nil), live(worker.RuntimeSGLang, worker.RoleDecode, nil)
	us := pl.plan(testJob(handoff.RouteCompletions, 2, nil, "a", "b"), parallelSGLang, "cmpl-1", p, d)
	require.Len(t, us, 4)
	assert.Equal(t, []string{"cmpl-1-p0-0", "cmpl-1-p0-1", "cmpl-1-p1-0", "cmpl-1-p1-1"},
		[]string{us[0].dLeg.RequestID, us[1].dLeg.RequestID, us[2].dLeg.RequestID, us[3].dLeg.RequestID})
	assert.Equal(t, []int{0, 1, 2, 3}, []int{us[0].index, us[1].index, us[2].index, us[3].index})

	vp, vd := live(worker.RuntimeVLLM, worker.RolePrefill, nil), live(worker.RuntimeVLLM, worker.RoleDecode, nil)
	vs := pl.plan(testJob(handoff.RouteChat, 3, nil, "a"), sequentialVLLM, "chatcmpl-1", vp, vd)
	require.Len(t, vs, 1, "vLLM never fans out")
	assert.EqualValues(t, 3, vs[0].dLeg.Sampling.N)
	assert.Equal(t, 3, vs[0].width)
	assert.Nil(t, vs[0].dLeg.Rendezvous)
}

func TestMintRendezvousRanges(t *testing.T) {
	p := live(worker.RuntimeSGLang, worker.RolePrefill, nil)
	for i := 0; i < 2000; i++ {
		r := mintRendezvous(parallelSGLang, p)
		require.GreaterOrEqual(t, r.Room, int64(0))
		require.Less(t, r.Room, int64(math.MaxInt32))
	}
	ts := live(worker.RuntimeTokenSpeed, worker.RolePrefill, nil)
	rank, size := 2, 4
	ts.DPRank, ts.DPSize = &rank, &size
	for i := 0; i < 2000; i++ {
		r := mintRendezvous(parallelTokenSpeed, ts)
		require.GreaterOrEqual(t, r.Room, int64(0))
		require.EqualValues(t, 2, r.Room%4, "room %% dp_size is the prefill's rank")
	}
	none := live(worker.RuntimeTokenSpeed, worker.RolePrefill, nil)
	none.BootstrapPort = nil
	assert.Equal(t, DefaultBootstrapPort, mintRendezvous(parallelTokenSpeed, none).Port)
}

func TestCheckPair(t *testing.T) {
	code := func(err error) (int, string) {
		e, ok := errs.As(err)
		require.True(t, ok, "%v", err)
		return e.Status, e.Code
	}
	_, err := checkPair(live(worker.RuntimeTRTLLM, worker.RolePrefill, nil), live(worker.RuntimeTRTLLM, worker.RoleDecode, nil))
	st, c := code(err)
	assert.Equal(t, http.StatusBadRequest, st)
	assert.Equal(t, "runtime_pd_not_supported", c)

	_, err = checkPair(live(worker.RuntimeSGLang, worker.RolePrefill, nil), live(worker.RuntimeVLLM, worker.RoleDecode, nil))
	_, c = code(err)
	assert.Equal(t, "runtime_pd_not_supported", c)

	mp, md := live(worker.RuntimeVLLM, worker.RolePrefill, nil), live(worker.RuntimeVLLM, worker.RoleDecode, nil)
	mp.KVConnector, md.KVConnector = "MoRIIOConnector", "MoRIIOConnector"
	_, err = checkPair(mp, md)
	st, c = code(err)
	assert.Equal(t, http.StatusNotImplemented, st)
	assert.Equal(t, "moriio_grpc_pd_unsupported", c)

	pr, err := checkPair(live(worker.RuntimeVLLM, worker.RolePrefill, nil), live(worker.RuntimeVLLM, worker.RoleDecode, nil))
	require.NoError(t, err)
	assert.Equal(t, sequentialVLLM, pr)
}

func TestContextWindowAndCheck(t *testing.T) {
	assert.Equal(t, 0, contextWindow(live(worker.RuntimeSGLang, worker.RoleDecode, nil)))
	assert.Equal(t, 100, contextWindow(live(worker.RuntimeSGLang, worker.RoleDecode, map[string]string{"max_model_len": "100", "max_total_tokens": "9"})))
	assert.Equal(t, 7, contextWindow(live(worker.RuntimeSGLang, worker.RoleDecode, map[string]string{"context_length": "7", "max_model_len": "100"})))
	j := testJob(handoff.RouteCompletions, 1, nil, "a", "b") // 3 ids each: each prompt alone
	p := live(worker.RuntimeSGLang, worker.RolePrefill, map[string]string{"context_length": "3"})
	d := live(worker.RuntimeSGLang, worker.RoleDecode, nil)
	assert.NoError(t, checkContext(j, p, d), "input == limit passes; a batch is not summed")
	d.Labels = map[string]string{"context_length": "2"}
	assert.Error(t, checkContext(j, p, d), "the smaller window of the two legs")
	assert.NoError(t, checkContext(j, live(worker.RuntimeSGLang, worker.RolePrefill, nil), live(worker.RuntimeSGLang, worker.RoleDecode, nil)),
		"no window, no check")
}

func TestMooncakeEngineID(t *testing.T) {
	p := live(worker.RuntimeVLLM, worker.RolePrefill, nil)
	assert.Equal(t, "", mooncakeEngineID(p), "no engine id: unknown")
	p.KVEngineID = "eng"
	assert.Equal(t, "eng", mooncakeEngineID(p))
	p.SetEngineID("fresh")
	assert.Equal(t, "fresh", mooncakeEngineID(p), "the refreshed id wins")
	p.Labels = map[string]string{"data_parallel_size": "2"}
	assert.Equal(t, "", mooncakeEngineID(p), "DP>1 needs a pinned rank")
	r := 1
	p.DPRank = &r
	assert.Equal(t, "fresh_dp1", mooncakeEngineID(p))
	p.Labels = map[string]string{"dp_size": "zero"}
	assert.Equal(t, "", mooncakeEngineID(p), "an unparsable dp size fails closed")
}
