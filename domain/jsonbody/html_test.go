package jsonbody_test

import (
	"encoding/json"
	"testing"

	"github.com/smg-go/smg/domain/jsonbody"
)

func stringSeeds() []string {
	seeds := []string{"", "plain", "a<b>&c", "\b\f\n\r\t\x00\x1f\x7f", "\u2028\u2029 x", "bad\xff\xfe", "\xe2\x82",
		"\xed\xa0\x80", "é中😀", "\"\\/", "\u00e9\u0301", "\xf4\x90\x80\x80", "tail\xc3", "\uFFFD"}
	for c := range 256 {
		seeds = append(seeds, string([]byte{byte(c)}), "x"+string([]byte{byte(c)})+"y")
	}
	return seeds
}

func TestAppendStringHTMLMatchesMarshal(t *testing.T) {
	for _, s := range stringSeeds() {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonbody.AppendStringHTML([]byte("pre"), s); string(got) != "pre"+string(want) {
			t.Errorf("%q: got %s, want %s", s, got[3:], want)
		}
	}
}

// FuzzAppendStringHTML holds AppendStringHTML to json.Marshal, byte for byte.
func FuzzAppendStringHTML(f *testing.F) {
	for _, s := range stringSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := jsonbody.AppendStringHTML(nil, s); string(got) != string(want) {
			t.Errorf("%q: got %s, want %s", s, got, want)
		}
	})
}
