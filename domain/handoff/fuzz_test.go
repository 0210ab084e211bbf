package handoff_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/jsonbody"
)

func decodeAny(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("invalid JSON %q: %v", b, err)
	}
	return v
}

// untouched returns key\x00raw for every member whose key is not in skip, in order.
func untouched(t *testing.T, b []byte, skip ...string) []string {
	t.Helper()
	o, err := jsonbody.Parse(b)
	if err != nil {
		t.Fatalf("parse %q: %v", b, err)
	}
	var out []string
	for k, v := range o.Members() {
		if !slices.Contains(skip, k) {
			out = append(out, k+"\x00"+string(v))
		}
	}
	return out
}

var bootstrapKeys = []string{"bootstrap_host", "bootstrap_port", "bootstrap_room", "routed_dp_rank", "disagg_prefill_dp_rank"}

// FuzzBootstrapPatch: both legs are valid JSON, carry identical bootstrap values of the
// right form (scalars or batch-length lists), the right DP fields, and every other member
// byte-identical and in order.
func FuzzBootstrapPatch(f *testing.F) {
	f.Add([]byte(`{"model":"m","messages":[]}`), uint8(0), int32(8998), "10.0.0.1", int8(-1), int8(-1))
	f.Add([]byte(`{"bootstrap_room":1,"prompt":["a","b"]}`), uint8(2), int32(-1), "[::1]", int8(2), int8(3))
	f.Add([]byte(" {\"text\":[\"x\"] , \"bootstrap_host\":null}\n"), uint8(1), int32(1), "h\"\x00é", int8(0), int8(-1))
	f.Add([]byte(`{"routed_dp_rank":4,"routed_dp_rank":5}`), uint8(3), int32(0), "", int8(-1), int8(7))
	f.Fuzz(func(t *testing.T, body []byte, batch uint8, port int32, host string, dpP, dpD int8) {
		o, err := jsonbody.Parse(body)
		if err != nil {
			return
		}
		tg := handoff.Target{Host: host}
		if port >= 0 {
			p := int(port)
			tg.Port = &p
		}
		if dpP >= 0 {
			r := int(dpP)
			tg.PrefillDPRank = &r
		}
		if dpD >= 0 {
			r := int(dpD)
			tg.DecodeDPRank = &r
		}
		n := int(batch % 6)
		legs := handoff.BootstrapPatch(o, n, tg, nil)
		if len(legs.Rooms) != max(n, 1) {
			t.Fatalf("rooms %v for batch %d", legs.Rooms, n)
		}
		for _, r := range legs.Rooms {
			if r >= 1<<63 {
				t.Fatalf("room %d out of range", r)
			}
		}
		hostJSON, portJSON := decodeAny(t, mustMarshal(t, host)), any(nil)
		if tg.Port != nil {
			portJSON = json.Number(itoa(*tg.Port))
		}
		for leg, b := range map[string][]byte{"prefill": legs.Prefill, "decode": legs.Decode} {
			got, ok := decodeAny(t, b).(map[string]any)
			if !ok {
				t.Fatalf("%s leg not an object: %q", leg, b)
			}
			wantHost, wantPort, wantRoom := hostJSON, portJSON, any(json.Number(utoa(legs.Rooms[0])))
			if n > 0 {
				hs, ps, rs := make([]any, n), make([]any, n), make([]any, n)
				for i := range n {
					hs[i], ps[i], rs[i] = hostJSON, portJSON, json.Number(utoa(legs.Rooms[i]))
				}
				wantHost, wantPort, wantRoom = hs, ps, rs
			}
			for k, want := range map[string]any{"bootstrap_host": wantHost, "bootstrap_port": wantPort, "bootstrap_room": wantRoom} {
				if !reflect.DeepEqual(got[k], want) {
					t.Fatalf("%s leg %s = %#v, want %#v (%q)", leg, k, got[k], want, b)
				}
			}
			if !slices.Equal(untouched(t, body, bootstrapKeys...), untouched(t, b, bootstrapKeys...)) {
				t.Fatalf("%s leg changed other members: %q -> %q", leg, body, b)
			}
			var wantRouted, wantDisagg *int
			if leg == "prefill" {
				wantRouted = tg.PrefillDPRank
			} else {
				wantRouted, wantDisagg = tg.DecodeDPRank, tg.PrefillDPRank
			}
			if tg.PrefillDPRank != nil || tg.DecodeDPRank != nil {
				checkRank(t, got, "routed_dp_rank", wantRouted)
				checkRank(t, got, "disagg_prefill_dp_rank", wantDisagg)
			}
		}
	})
}

func checkRank(t *testing.T, got map[string]any, key string, want *int) {
	t.Helper()
	v, ok := got[key]
	if want == nil {
		if ok {
			t.Fatalf("%s = %v, want absent", key, v)
		}
		return
	}
	if v != json.Number(itoa(*want)) {
		t.Fatalf("%s = %v, want %d", key, v, *want)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func itoa(v int) string    { return string(mustMarshalNoT(v)) }
func utoa(v uint64) string { return string(mustMarshalNoT(v)) }
func mustMarshalNoT(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// refDone is an independent whole-stream reference: the offset just past the blank line
// (its CRLF included) ending the first event whose data is exactly [DONE], or -1.
func refDone(stream []byte) int {
	type line struct {
		text []byte
		end  int
	}
	var lines []line
	start := 0
	for i := 0; i < len(stream); i++ {
		switch stream[i] {
		case '\n':
			lines = append(lines, line{stream[start:i], i + 1})
			start = i + 1
		case '\r':
			end := i + 1
			if end < len(stream) && stream[end] == '\n' {
				end++
			}
			lines = append(lines, line{stream[start:i], end})
			start = end
			i = end - 1
		}
	}
	var data [][]byte
	for _, l := range lines {
		if len(l.text) == 0 {
			if len(data) > 0 && string(bytes.Join(data, []byte("\n"))) == "[DONE]" {
				return l.end
			}
			data = nil
			continue
		}
		name, value, found := bytes.Cut(l.text, []byte(":"))
		if !found {
			name, value = l.text, nil
		}
		if string(name) != "data" {
			continue
		}
		data = append(data, bytes.TrimPrefix(value, []byte(" ")))
	}
	return -1
}

func chunks(stream, cuts []byte) [][]byte {
	var out [][]byte
	i := 0
	for _, c := range cuts {
		if i >= len(stream) {
			break
		}
		n := int(c)%7 + 1
		out = append(out, stream[i:min(i+n, len(stream))])
		i += n
	}
	if i < len(stream) {
		out = append(out, stream[i:])
	}
	return out
}

// FuzzDoneScanner: the incremental scanner finds the same [DONE] event as the whole-stream
// reference however the stream is chunked (a CR that ends a chunk is reported at that CR),
// and ChunkHasDone on the whole stream agrees with the reference.
func FuzzDoneScanner(f *testing.F) {
	for _, s := range []string{
		"data: [DONE]\n\n", "data: {\"x\":1}\n\ndata: [DONE]\r\n\r\n", "data: [DONE]\ndata: x\n\n",
		"data:[DONE]\r\r", ": c\ndata: [DONE]\n\n", "data: \"data: [DONE]\"\n\n", "event: e\r\ndata: [DONE]\r\n\r\n",
	} {
		f.Add([]byte(s), []byte{0, 3, 1, 6})
	}
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		want := refDone(stream)
		if got := handoff.ChunkHasDone(stream, true); got != (want >= 0) {
			t.Fatalf("ChunkHasDone(%q)=%v, reference %d", stream, got, want)
		}
		var s handoff.DoneScanner
		off, got := 0, -1
		for _, c := range chunks(stream, cuts) {
			if end, done := s.Feed(c); done {
				got = off + end
				break
			}
			off += len(c)
		}
		if got == want {
			return
		}
		if want >= 2 && got == want-1 && stream[want-2] == '\r' && stream[want-1] == '\n' {
			return // the CR of a CRLF ended a chunk: reported at the CR
		}
		t.Fatalf("stream %q cuts %v: scanner %d, reference %d", stream, cuts, got, want)
	})
}

// FuzzEventSplitter: framing is lossless and independent of chunking, and every event
// ends with a blank line.
func FuzzEventSplitter(f *testing.F) {
	f.Add([]byte("data: a\n\n: c\r\n\r\ndata: b\r\rtail"), []byte{1, 2, 3})
	f.Add([]byte("\n\n\r\n"), []byte{0})
	f.Fuzz(func(t *testing.T, stream, cuts []byte) {
		split := func(parts [][]byte) ([]string, string) {
			var sp handoff.EventSplitter
			var evs []string
			for _, p := range parts {
				if err := sp.Write(p); err != nil {
					t.Fatal(err)
				}
				for {
					ev, ok := sp.Next()
					if !ok {
						break
					}
					evs = append(evs, string(ev))
				}
			}
			return evs, string(sp.Flush())
		}
		whole, wholeRest := split([][]byte{stream})
		evs, rest := split(chunks(stream, cuts))
		if !slices.Equal(whole, evs) || rest != wholeRest {
			t.Fatalf("chunking changed framing: %q|%q vs %q|%q", whole, wholeRest, evs, rest)
		}
		if joined := string(bytes.Join([][]byte{[]byte(stringsJoin(evs)), []byte(rest)}, nil)); joined != string(stream) {
			t.Fatalf("lossy framing: %q -> %q", stream, joined)
		}
		for _, ev := range evs {
			rest, ok := cutEOL(ev)
			if ok && rest != "" {
				_, ok = cutEOL(rest)
			}
			if !ok {
				t.Fatalf("event %q does not end with a blank line", ev)
			}
		}
	})
}

// cutEOL removes one trailing line end (CRLF, LF or CR).
func cutEOL(s string) (string, bool) {
	switch {
	case len(s) >= 2 && s[len(s)-2:] == "\r\n":
		return s[:len(s)-2], true
	case len(s) >= 1 && (s[len(s)-1] == '\n' || s[len(s)-1] == '\r'):
		return s[:len(s)-1], true
	}
	return s, false
}

func stringsJoin(s []string) string {
	var b bytes.Buffer
	for _, x := range s {
		b.WriteString(x)
	}
	return b.String()
}

// FuzzKVTransferParams: for any prefill response, nixl and passthrough relay exactly the
// bytes of a non-empty kv_transfer_params object (and nothing otherwise), the decode body
// keeps every other client member byte-identical, the prefill body is valid and capped, and
// Mooncake's minted params are valid JSON with exactly five keys whatever the host, engine
// id and uuid strings.
func FuzzKVTransferParams(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":50,"stream":true,"messages":[]}`),
		[]byte(`{"kv_transfer_params":{"remote_engine_id":"eng0","remote_block_ids":[[1,2],["3"]],"x":{}}}`), "h", "e", "u")
	f.Add([]byte(`{"kv_transfer_params":{"evil":1},"max_completion_tokens":3,"n":1}`), []byte(`{"kv_transfer_params":null}`), "[::1]", "", "")
	f.Add([]byte(`{"n":2}`), []byte(`{"kv_transfer_params":{}}`), "\"", "\\", "\x00")
	f.Add([]byte(`{"stream_options":{},"min_tokens":3}`), []byte(`not json`), "h", "e\u2028", "é")
	f.Fuzz(func(t *testing.T, client, prefillResp []byte, host, engine, uuid string) {
		req, err := handoff.Inspect(handoff.RouteChat, client)
		if err != nil {
			return
		}
		// Reference: encoding/json view of the prefill response's params.
		var ref map[string]json.RawMessage
		var refParams []byte
		if json.Unmarshal(prefillResp, &ref) == nil && jsonbody.Valid(prefillResp) {
			if raw, ok := ref["kv_transfer_params"]; ok {
				var obj map[string]any
				if json.Unmarshal(raw, &obj) == nil && obj != nil && len(obj) > 0 {
					refParams = raw
				}
			}
		}
		harvested := handoff.HarvestParams(prefillResp)
		if (harvested != nil) != (refParams != nil) {
			t.Fatalf("HarvestParams(%q)=%q, reference %q", prefillResp, harvested, refParams)
		}
		if harvested != nil && !reflect.DeepEqual(decodeAny(t, harvested), decodeAny(t, refParams)) {
			t.Fatalf("harvested %q differs from %q", harvested, refParams)
		}
		mooncake := &handoff.Mooncake{Host: host, Port: 8998, EngineID: engine, NewUUID: func() string { return uuid }}
		for _, c := range []handoff.Connector{handoff.Nixl{}, handoff.Passthrough{}, mooncake} {
			plan, err := handoff.PlanSequential(c, req)
			if err != nil {
				t.Fatalf("%s plan: %v", c.Mode(), err)
			}
			noHandoff := c.Mode() == "mooncake" && engine == ""
			if plan.SkipPrefill != (req.N > 1 || noHandoff) {
				t.Fatalf("skip %v with n=%d", plan.SkipPrefill, req.N)
			}
			if !plan.SkipPrefill {
				pm := decodeAny(t, plan.Prefill).(map[string]any)
				if pm["stream"] != false || pm["stream_options"] != nil || pm["min_tokens"] != nil {
					t.Fatalf("prefill not sanitised: %q", plan.Prefill)
				}
				capKey := "max_tokens"
				if req.HasMaxCompletionTokens {
					capKey = "max_completion_tokens"
					if _, ok := pm["max_tokens"]; ok {
						t.Fatalf("both caps sent: %q", plan.Prefill)
					}
				}
				if pm[capKey] != json.Number("1") {
					t.Fatalf("%s not capped: %q", capKey, plan.Prefill)
				}
			}
			body, outcome := plan.Decode(prefillResp)
			if !slices.Equal(untouched(t, client, "kv_transfer_params"), untouched(t, body, "kv_transfer_params")) {
				t.Fatalf("decode body changed client members: %q -> %q", client, body)
			}
			bo, _ := jsonbody.Parse(body)
			got, has := bo.Get("kv_transfer_params")
			switch {
			case plan.SkipPrefill && !(noHandoff && req.N <= 1):
				if has || outcome != handoff.OutcomeSkipPrefill {
					t.Fatalf("n>1 decode carries params or wrong outcome %v", outcome)
				}
			case c.Mode() == "mooncake":
				if engine == "" {
					if has || outcome != handoff.OutcomeRecompute {
						t.Fatalf("mooncake without engine: %q %v", body, outcome)
					}
					continue
				}
				m := decodeAny(t, got).(map[string]any)
				if len(m) != 5 || m["transfer_id"] != "xfer-"+jsonRoundTrip(uuid) || m["remote_engine_id"] != jsonRoundTrip(engine) ||
					m["remote_bootstrap_addr"] != jsonRoundTrip("http://"+host+":8998") || m["do_remote_prefill"] != true {
					t.Fatalf("mooncake params %q", got)
				}
			case harvested != nil:
				if !bytes.Equal(got, harvested) || outcome != handoff.OutcomeRelayed {
					t.Fatalf("%s did not relay verbatim: %q vs %q", c.Mode(), got, harvested)
				}
			default:
				if has {
					t.Fatalf("%s decode carries params %q without a harvest", c.Mode(), got)
				}
				if (c.Mode() == "nixl") != outcome.CountsKVTransferFailure() {
					t.Fatalf("%s outcome %v", c.Mode(), outcome)
				}
			}
		}
	})
}

// jsonRoundTrip is what s reads as after JSON encoding (invalid UTF-8 becomes U+FFFD).
func jsonRoundTrip(s string) string {
	var out string
	_ = json.Unmarshal(mustMarshalNoT(s), &out)
	return out
}

// FuzzMergeLogprobs: the merged body is valid JSON whose input_token_logprobs is the
// prefill array followed by the decode array, everything else unchanged.
func FuzzMergeLogprobs(f *testing.F) {
	f.Add([]byte(`[[-0.1,1,null]]`), []byte(`{"meta_info":{"input_token_logprobs":[[-0.2,2,"x"]],"id":"r"},"text":"t"}`))
	f.Add([]byte(`[]`), []byte(`{"meta_info":{"input_token_logprobs":[]}}`))
	f.Fuzz(func(t *testing.T, prefill, decode []byte) {
		if !jsonbody.Valid(prefill) {
			return
		}
		out, merged := handoff.MergeLogprobs(prefill, decode)
		if !merged {
			if !bytes.Equal(out, decode) {
				t.Fatalf("unmerged body changed")
			}
			return
		}
		var pa, da []any
		if json.Unmarshal(prefill, &pa) != nil {
			t.Fatalf("merged with non-array prefill %q", prefill)
		}
		var dm, om map[string]any
		_ = json.Unmarshal(decode, &dm)
		if err := json.Unmarshal(out, &om); err != nil {
			t.Fatalf("merged body invalid: %v %q", err, out)
		}
		mi := dm["meta_info"].(map[string]any)
		da, _ = mi["input_token_logprobs"].([]any)
		mi["input_token_logprobs"] = append(append([]any{}, pa...), da...)
		if !reflect.DeepEqual(normalize(dm), normalize(om)) {
			t.Fatalf("merge semantics: %q + %q -> %q", prefill, decode, out)
		}
	})
}

func normalize(v any) any {
	b, _ := json.Marshal(v)
	var out any
	_ = json.Unmarshal(b, &out)
	return out
}
