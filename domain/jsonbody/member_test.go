package jsonbody_test

import (
	"testing"

	"github.com/smg-go/smg/domain/jsonbody"
)

// TestMemberAgreesWithGet checks Member against Parse+Get on objects with duplicates,
// escaped and non-ASCII keys, nested values and whitespace, and on non-objects.
func TestMemberAgreesWithGet(t *testing.T) {
	docs := []string{
		`{}`,
		` { "a" : 1 , "b":[1,{"a":2}], "c":{"d":"x\"}"}, "a": "last" } `,
		`{"\u0061":true,"a\u00e9":null,"aé":3,"k":-1.5e3}`,
		`{"usage":{"prompt_tokens":16,"prompt_tokens_details":{"cached_tokens":0}},"usage":{"prompt_tokens":7}}`,
		`{"s":"a,b}c","t":"\\","u":{"v":[[],{}]}}`,
	}
	keys := []string{"a", "b", "c", "d", "aé", "k", "usage", "prompt_tokens", "s", "t", "u", "v", "missing", ""}
	for _, doc := range docs {
		o, err := jsonbody.Parse([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		for _, k := range keys {
			want, wantOK := o.Get(k)
			got, gotOK := jsonbody.Member([]byte(doc), k)
			if gotOK != wantOK || string(got) != string(want) {
				t.Errorf("%s key %q: Member = %q %v, Get = %q %v", doc, k, got, gotOK, want, wantOK)
			}
		}
	}
	for _, v := range []string{`[1]`, `"a"`, `1`, `null`, ``, `   `} {
		if raw, ok := jsonbody.Member([]byte(v), "a"); ok {
			t.Errorf("Member(%q) = %q, want not found", v, raw)
		}
	}
}

// TestMemberAllocatesNothing pins the reason Member exists: no index for a nested lookup.
func TestMemberAllocatesNothing(t *testing.T) {
	doc := []byte(`{"prompt_tokens":16,"completion_tokens":16,"prompt_tokens_details":{"cached_tokens":0}}`)
	n := testing.AllocsPerRun(100, func() {
		if _, ok := jsonbody.Member(doc, "prompt_tokens_details"); !ok {
			t.Fatal("not found")
		}
	})
	if n != 0 {
		t.Fatalf("Member allocated %v times per call", n)
	}
}

// TestPatchRelease checks that a released Patch (and its nested ones) leaves the bytes it
// rendered intact, that the next Edit starts empty, and that a released Patch's memory is
// reused: Edit, two edits, Bytes and Release cost only the rendered body.
func TestPatchRelease(t *testing.T) {
	o, err := jsonbody.Parse([]byte(`{"a":1,"s":{"n":2}}`))
	if err != nil {
		t.Fatal(err)
	}
	p := o.Edit()
	p.SetInt("a", 5)
	sub, err := p.Nested("s")
	if err != nil {
		t.Fatal(err)
	}
	sub.SetBool("x", true)
	out := p.Bytes()
	p.Release()
	q := o.Edit()
	q.SetString("b", "y")
	if got, want := string(out), `{"a":5,"s":{"n":2,"x":true}}`; got != want {
		t.Fatalf("rendered before Release: %s, want %s", got, want)
	}
	if got, want := string(q.Bytes()), `{"a":1,"s":{"n":2},"b":"y"}`; got != want {
		t.Fatalf("next Edit: %s, want %s", got, want)
	}
	q.Release()
	if raceEnabled {
		return
	}
	n := testing.AllocsPerRun(100, func() {
		p := o.Edit()
		p.SetInt("a", 7).SetUint("room", 42)
		_ = p.Bytes()
		p.Release()
	})
	if n > 1 {
		t.Fatalf("Edit+Bytes+Release allocated %v times, want 1 (the body)", n)
	}
}
