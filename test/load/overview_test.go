package load

import (
	"strings"
	"testing"
)

func TestParseDispatchAllocs(t *testing.T) {
	in := `goos: linux
BenchmarkDispatch/sglang/non-streaming-2         	    5000	     87766 ns/op	    6726 B/op	      79 allocs/op
BenchmarkDispatch/vllm/streaming-2             	    5000	    230759 ns/op	    7711 B/op	      79 allocs/op
BenchmarkSSERelay/events=64-2                    	    2000	    178730 ns/op	  56.66 MB/s	   15400 B/op	      88 allocs/op
BenchmarkDispatch/vllm/non-streaming             	    5000	    216251 ns/op	    6980 B/op	      77 allocs/op
PASS`
	got, err := ParseDispatchAllocs(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]AllocFigure{"sglang/non-streaming": {6726, 79}, "vllm/streaming": {7711, 79}, "vllm/non-streaming": {6980, 77}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: got %v, want %v", k, got[k], w)
		}
	}
}
