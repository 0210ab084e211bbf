package jsonbody_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/smg-go/smg/domain/jsonbody"
)

// decode is the reference semantics: encoding/json into any, numbers kept as json.Number.
func decode(b []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	return v, nil
}

// FuzzParse checks Parse against encoding/json: it accepts exactly the valid documents whose
// top-level value is an object, and Get agrees with json.Unmarshal for every key.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1}`, `{"a":1,"a":2}`, `{"a\u0062":"\ud83d\ude00","b":[1,{"c":null}]}`,
		`[1]`, `"x"`, `{"a":}`, `{"a":1e5,"b":-0.0,"c":true,"d":false}`, " {\t\"k\" :\n[] } ",
		"{\"\xff\":1}", `{"a":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o, err := jsonbody.Parse(data)
		if json.Valid(data) != jsonbody.Valid(data) {
			t.Fatalf("Valid disagrees with encoding/json for %q", data)
		}
		var m map[string]any
		jerr := json.Unmarshal(data, &m)
		isObj := json.Valid(data) && jsonbody.KindOf(data) == jsonbody.KindObject
		if isObj != (err == nil) {
			t.Fatalf("Parse(%q) err=%v, encoding/json object=%v (%v)", data, err, isObj, jerr)
		}
		if err != nil {
			return
		}
		var want map[string]any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&want); err != nil {
			t.Fatalf("decode: %v", err)
		}
		keys := o.Keys()
		for _, k := range keys {
			raw, ok := o.Get(k)
			if !ok {
				t.Fatalf("Get(%q) missing", k)
			}
			got, err := decode(raw)
			if err != nil {
				t.Fatalf("raw value of %q invalid: %v", k, err)
			}
			if !reflect.DeepEqual(got, want[k]) {
				t.Fatalf("Get(%q)=%v, encoding/json %v", k, got, want[k])
			}
			if m, ok := jsonbody.Member(data, k); !ok || string(m) != string(raw) {
				t.Fatalf("Member(%q)=%q %v, Get %q", k, m, ok, raw)
			}
		}
		if len(want) > len(keys) {
			t.Fatalf("keys %v, encoding/json has %d", keys, len(want))
		}
	})
}

var fuzzValues = []string{`1`, `null`, `true`, `"x"`, `{"a":[1,2]}`, `[]`, `-0.5e3`, `"\u00e9\ud83d\ude00"`, `{}`}
var fuzzKeys = []string{"n", "bootstrap_room", "new", "a\"b", "é", "", "sampling_params"}

type op struct {
	code, key, val byte
}

// FuzzPatch applies a byte-coded program of edits to a body and checks the output against
// the same edits applied to encoding/json's map: the output is valid JSON with the intended
// semantics, untouched members are byte-identical and in source order, and Len is exact.
func FuzzPatch(f *testing.F) {
	f.Add([]byte(`{"model":"m","n":3,"x":{"y":1}}`), []byte{0, 0, 0, 6, 2, 0, 8, 6, 1})
	f.Add([]byte(`{"a":1,"a":2,"n":[1]}`), []byte{1, 0, 3, 6, 1, 0, 7, 0, 4})
	f.Add([]byte(" { } "), []byte{2, 1, 200, 3, 2, 255, 4, 3, 1, 5, 4, 0})
	f.Add([]byte(`{"sampling_params":{"n":2},"text":"hi"}`), []byte{8, 6, 0, 8, 6, 1, 6, 9, 0})
	f.Add([]byte(`{"n":1}`), []byte{6, 0, 0, 7, 0, 1, 0, 0, 2})
	f.Fuzz(func(t *testing.T, body, prog []byte) {
		o, err := jsonbody.Parse(body)
		if err != nil {
			return
		}
		src := append([]byte(nil), body...)
		keys := append(slices.Clone(fuzzKeys), o.Keys()...)
		var model map[string]any
		if err := json.Unmarshal(body, &model); err != nil {
			t.Fatalf("reference decode: %v", err)
		}
		want, _ := decode(body)
		wantMap := want.(map[string]any)
		edited := map[string]bool{}
		p := o.Edit()
		for i := 0; i+2 < len(prog) && i < 60; i += 3 {
			c := op{prog[i] % 9, prog[i+1], prog[i+2]}
			key := keys[int(c.key)%len(keys)]
			rawVal := []byte(fuzzValues[int(c.val)%len(fuzzValues)])
			apply := func(v any) { wantMap[key] = v; edited[key] = true }
			switch c.code {
			case 0:
				p.Set(key, rawVal)
				v, _ := decode(rawVal)
				apply(v)
			case 1:
				s := string(body[:int(c.val)%(len(body)+1)])
				p.SetString(key, s)
				enc, _ := json.Marshal(s)
				v, _ := decode(enc)
				apply(v)
			case 2:
				p.SetInt(key, int64(int8(c.val))*1e15)
				v, _ := decode([]byte(json.Number(itoa(int64(int8(c.val)) * 1e15))))
				apply(v)
			case 3:
				p.SetUint(key, uint64(c.val)<<56)
				v, _ := decode([]byte(utoa(uint64(c.val) << 56)))
				apply(v)
			case 4:
				p.SetBool(key, c.val%2 == 0)
				apply(c.val%2 == 0)
			case 5:
				p.SetNull(key)
				apply(nil)
			case 6:
				p.Delete(key)
				delete(wantMap, key)
				edited[key] = true
			case 7:
				_, present := wantMap[key]
				if p.Replace(key, rawVal) != present {
					t.Fatalf("Replace(%q) presence mismatch", key)
				}
				if present {
					v, _ := decode(rawVal)
					apply(v)
				}
			case 8:
				sub, err := p.Nested(key)
				cur, present := wantMap[key]
				_, isObj := cur.(map[string]any)
				if (err == nil) != (!present || cur == nil || isObj) {
					t.Fatalf("Nested(%q) err=%v with current value %v", key, err, cur)
				}
				if err != nil {
					continue
				}
				inner, _ := cur.(map[string]any)
				if inner == nil {
					inner = map[string]any{}
				}
				ik := fuzzKeys[int(c.val)%len(fuzzKeys)]
				if c.val%3 == 0 {
					sub.Delete(ik)
					delete(inner, ik)
				} else {
					sub.Set(ik, rawVal)
					v, _ := decode(rawVal)
					inner[ik] = v
				}
				apply(inner)
			}
		}
		out := p.Bytes()
		if !bytes.Equal(body, src) {
			t.Fatalf("source modified")
		}
		if p.Len() != len(out) {
			t.Fatalf("Len %d != len(Bytes) %d: %q", p.Len(), len(out), out)
		}
		got, err := decode(out)
		if err != nil || !json.Valid(out) {
			t.Fatalf("output invalid: %v: %q", err, out)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("semantics differ:\n got %v\nwant %v\nout %q", got, want, out)
		}
		// Untouched members: byte-identical, same relative order.
		po, err := jsonbody.Parse(out)
		if err != nil {
			t.Fatalf("reparse: %v", err)
		}
		var before, after []string
		for k, v := range o.Members() {
			if !edited[k] {
				before = append(before, k+"\x00"+string(v))
			}
		}
		for k, v := range po.Members() {
			if !edited[k] {
				after = append(after, k+"\x00"+string(v))
			}
		}
		if !slices.Equal(before, after) {
			t.Fatalf("untouched members changed:\n%q\n%q", before, after)
		}
		// Source keys keep their positions: the output's key list starts with the surviving
		// source keys in source order.
		var surviving []string
		for _, k := range o.Keys() {
			if _, ok := wantMap[k]; ok {
				surviving = append(surviving, k)
			}
		}
		if outKeys := po.Keys(); !slices.Equal(outKeys[:min(len(surviving), len(outKeys))], surviving) {
			t.Fatalf("source key order lost: %q vs %q", outKeys, surviving)
		}
	})
}

// FuzzString checks AppendString against encoding/json (HTML escaping off) and String
// against json.Unmarshal.
func FuzzString(f *testing.F) {
	for _, s := range []string{"", "plain", "q\"\\", "\x00\x1f\n", "é\u2028\u2029", "\xff\xfe", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		want := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		got := jsonbody.AppendString(nil, s)
		// Invalid UTF-8 becomes U+FFFD: go1.26's encoder writes it as the escape \ufffd,
		// go1.27's as the raw character. Both decode to the same string, so the escape and
		// the raw form are compared as equal.
		fffd := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte(`\ufffd`), []byte("\uFFFD")) }
		if !bytes.Equal(fffd(got), fffd(want)) {
			t.Fatalf("AppendString(%q)=%s want %s", s, got, want)
		}
		dec, ok := jsonbody.String(got)
		var ref string
		if err := json.Unmarshal(got, &ref); err != nil || !ok || dec != ref {
			t.Fatalf("String(%s)=%q,%v want %q (%v)", got, dec, ok, ref, err)
		}
		// Arbitrary bytes as a string body.
		raw := []byte(`"` + s + `"`)
		if json.Valid(raw) {
			var ref string
			_ = json.Unmarshal(raw, &ref)
			if dec, ok := jsonbody.String(raw); !ok || dec != ref {
				t.Fatalf("String(%q)=%q want %q", raw, dec, ref)
			}
		}
	})
}

func itoa(v int64) string  { b, _ := json.Marshal(v); return string(b) }
func utoa(v uint64) string { b, _ := json.Marshal(v); return string(b) }
