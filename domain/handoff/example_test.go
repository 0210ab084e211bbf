package handoff_test

import (
	"fmt"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

// The SGLang parallel path: inspect once, fan out n>1, patch each sample's body with its
// own rendezvous, send both legs at once.
func Example_sglang() {
	req, err := handoff.Inspect(handoff.RouteChat, []byte(`{"model":"m","n":2,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		panic(err) // an *errs.Error with status 400 in real code
	}
	samples, _ := handoff.SplitSamples(req) // n single-sample bodies
	port := 8998
	prefill := worker.Worker{URL: "http://10.0.0.1:8000", BootstrapPort: &port}
	decode := worker.Worker{URL: "http://10.0.0.2:8000"}
	room := uint64(100)
	for _, s := range samples {
		legs := handoff.BootstrapPatch(s, req.Batch, handoff.TargetFor(prefill, decode, false),
			func() uint64 { room++; return room }) // nil = MintRoom in real code
		fmt.Println(string(legs.Prefill))
	}
	// Output:
	// {"model":"m","n":1,"messages":[{"role":"user","content":"hi"}],"bootstrap_host":"10.0.0.1","bootstrap_port":8998,"bootstrap_room":101}
	// {"model":"m","n":1,"messages":[{"role":"user","content":"hi"}],"bootstrap_host":"10.0.0.1","bootstrap_port":8998,"bootstrap_room":102}
}

// The vLLM sequential path: connector from the prefill worker, one-token prefill leg, then
// the decode leg from the prefill's response, with an outcome to count.
func Example_vllm() {
	req, _ := handoff.Inspect(handoff.RouteCompletions, []byte(`{"model":"m","prompt":"hi","max_tokens":64,"stream":true}`))
	conn, err := handoff.ConnectorForPair(
		worker.Worker{URL: "http://p:8000", KVConnector: "NixlConnector"},
		worker.Worker{URL: "http://d:8000", KVConnector: "NixlConnector"},
		func() string { return "uuid-v7" })
	if err != nil {
		panic(err) // ErrMoRIIOPath: MoRI-IO pairs use CheckMoRIIOPair and PlanMoRIIO
	}
	plan, _ := handoff.PlanSequential(conn, req)
	fmt.Println(plan.Mode, plan.SkipPrefill)
	fmt.Println(string(plan.Prefill))
	prefillResponse := []byte(`{"choices":[],"kv_transfer_params":{"remote_engine_id":"e","remote_block_ids":[[3,4]]}}`)
	decodeBody, outcome := plan.Decode(prefillResponse)
	fmt.Println(string(decodeBody))
	fmt.Println(outcome, outcome.CountsKVTransferFailure())
	// Output:
	// nixl false
	// {"model":"m","prompt":"hi","max_tokens":1,"stream":false,"kv_transfer_params":{"do_remote_decode":true,"do_remote_prefill":false}}
	// {"model":"m","prompt":"hi","max_tokens":64,"stream":true,"kv_transfer_params":{"remote_engine_id":"e","remote_block_ids":[[3,4]]}}
	// relayed false
}

// A relay stops reading upstream after the line-anchored [DONE] event.
func ExampleDoneScanner() {
	var s handoff.DoneScanner
	for _, chunk := range []string{"data: {\"t\":\"data: [DONE]\"}\n\ndata: [DO", "NE]\n\nignored"} {
		end, done := s.Feed([]byte(chunk))
		fmt.Printf("%q %v\n", chunk[:end], done)
	}
	// Output:
	// "data: {\"t\":\"data: [DONE]\"}\n\ndata: [DO" false
	// "NE]\n\n" true
}
