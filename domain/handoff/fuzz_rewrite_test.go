package handoff_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
)

var fuzzRoutes = []handoff.Route{handoff.RouteGenerate, handoff.RouteChat, handoff.RouteCompletions,
	handoff.RouteMessages, handoff.RouteResponses, handoff.RouteRerank}

// FuzzInspectRewrite: for any client body on any route, Inspect either refuses it with a
// 4xx *errs.Error or accepts it, and then every rewrite the dispatcher applies produces
// valid JSON: both SGLang legs (bootstrap fields for exactly max(batch,1) rooms, the minted
// ones), every n>1 sample body (itself inspecting to n=1), and the vLLM prefill (stream
// off, n 1) and decode bodies. Nothing panics, whatever the bytes.
func FuzzInspectRewrite(f *testing.F) {
	f.Add(uint8(0), []byte(`{"text":"hi","sampling_params":{"max_new_tokens":4,"n":2},"stream":true}`))
	f.Add(uint8(0), []byte(`{"input_ids":[[1,2],[3]],"rid":["a","b"],"return_logprob":[true,false]}`))
	f.Add(uint8(1), []byte(`{"model":"m","messages":[{"role":"user","content":"x"}],"n":3,"seed":7,"logprobs":true}`))
	f.Add(uint8(1), []byte(`{"messages":[],"max_completion_tokens":5,"stream_options":{"include_usage":true}}`))
	f.Add(uint8(2), []byte(`{"prompt":[[1,2],[3,4]],"n":2,"max_tokens":1,"min_tokens":1}`))
	f.Add(uint8(2), []byte(`{"prompt":["a","b"],"n":null,"bootstrap_room":5}`))
	f.Add(uint8(3), []byte(`{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"t"}]}]}`))
	f.Add(uint8(4), []byte(`{"input":"x","instructions":"y","max_output_tokens":9}`))
	f.Add(uint8(5), []byte(`{"query":"q","documents":["a","b"]}`))
	f.Add(uint8(1), []byte(`{"n":129}`))
	f.Add(uint8(0), []byte(`{"sampling_params":[],"n":2}`))
	f.Add(uint8(2), []byte(` {"prompt":"\u0000\ud800","n":2,"seed":9223372036854775807} `))
	f.Add(uint8(1), []byte(`[]`))
	f.Fuzz(func(t *testing.T, r uint8, body []byte) {
		route := fuzzRoutes[int(r)%len(fuzzRoutes)]
		// A hang is a finding too: the fuzzer has no per-input deadline of its own.
		wd := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("input ran over 10 s: route %d body %q", r, body)) })
		defer wd.Stop()
		req, err := handoff.Inspect(route, body)
		if err != nil {
			e, ok := errs.As(err)
			if !ok || e.Status < 400 || e.Status > 499 {
				t.Fatalf("Inspect(%s, %q) error %v is not a 4xx *errs.Error", route, body, err)
			}
			return
		}
		if req.N < 1 || req.Batch < 0 {
			t.Fatalf("n=%d batch=%d", req.N, req.Batch)
		}
		_ = req.RoutingText()
		_ = req.PromptTokens()
		_ = req.String()

		port := 8998
		next := uint64(1000)
		legs := handoff.BootstrapPatch(req.Body, req.Batch, handoff.Target{Host: "10.0.0.1", Port: &port},
			func() uint64 { next++; return next })
		if want := max(req.Batch, 1); len(legs.Rooms) != want {
			t.Fatalf("%d rooms for batch %d", len(legs.Rooms), req.Batch)
		}
		for _, leg := range [][]byte{legs.Prefill, legs.Decode} {
			var m map[string]json.RawMessage
			if err := json.Unmarshal(leg, &m); err != nil {
				t.Fatalf("leg is not a JSON object: %v: %q", err, leg)
			}
			if want := roomsJSON(legs.Rooms, req.Batch); string(m["bootstrap_room"]) != want {
				t.Fatalf("bootstrap_room %s, want %s", m["bootstrap_room"], want)
			}
		}

		if route.Samples() && req.N > 1 {
			samples, err := handoff.SplitSamples(req)
			if err != nil {
				if _, ok := errs.As(err); !ok {
					t.Fatalf("SplitSamples error %v is not an *errs.Error", err)
				}
			} else {
				if len(samples) != req.N {
					t.Fatalf("%d samples for n=%d", len(samples), req.N)
				}
				for i, s := range samples {
					sr, err := handoff.Inspect(route, s.Bytes())
					if err != nil || sr.N != 1 {
						t.Fatalf("sample %d %q: n=%v err=%v", i, s.Bytes(), sr, err)
					}
				}
			}
		}

		pb, err := handoff.PrefillBody(req, []byte(`{"do_remote_decode":true,"do_remote_prefill":false}`))
		if err != nil {
			if _, ok := errs.As(err); !ok {
				t.Fatalf("PrefillBody error %v is not an *errs.Error", err)
			}
			return
		}
		pr, err := handoff.Inspect(route, pb)
		if err != nil || pr.Stream || pr.N != 1 {
			t.Fatalf("prefill body %q: %+v %v", pb, pr, err)
		}
		db := handoff.DecodeBody(req, []byte(`{"remote_engine_id":"e"}`))
		if !json.Valid(db) {
			t.Fatalf("decode body %q", db)
		}
	})
}

// roomsJSON is the bootstrap_room value BootstrapPatch must write: a scalar for one prompt,
// a list for a batch.
func roomsJSON(rooms []uint64, batch int) string {
	if batch == 0 {
		return strconv.FormatUint(rooms[0], 10)
	}
	b := []byte{'['}
	for i, r := range rooms {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, r, 10)
	}
	return string(append(b, ']'))
}
