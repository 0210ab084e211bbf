// Package fleet runs an in-process smg gateway in front of simulated engines (test/sim) for
// end-to-end suites: the PD suites of issues #4 and #5 and the resilience suite reuse it.
//
// Everything binds 127.0.0.1 on free ports and is torn down through t.Cleanup in reverse
// start order (gateway first, then the simulators), leaving no goroutine behind, so suites
// can run goleak.VerifyTestMain.
//
// A typical suite:
//
//	f := fleet.Start(t, fleet.Spec{Engine: sim.EngineSGLang, Prefills: 2, Decodes: 2})
//	r := f.Gateway.Post(t, "/generate", map[string]any{"text": "hello", "sampling_params": map[string]any{"max_new_tokens": 4}})
//	require.Equal(t, 200, r.Status)
//	st := fleet.SumStats(f.Decodes...)
//
// Gateway-only pieces (StartGateway, Gateway.Register, Gateway.WaitWorkers) let a suite
// register workers through POST /workers — needed for vLLM kv_connector settings — or mix
// SGLang and vLLM pairs in one gateway. Recorder is a scriptable engine stand-in that
// records every body it receives, for exact-JSON assertions the simulator cannot make.
package fleet
