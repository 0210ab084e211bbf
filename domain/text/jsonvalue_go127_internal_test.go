//go:build go1.27

package text

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// The in-place parse is the go1.27 build's (jsonvalue.go); older toolchains keep the
// encoding/json Decoder, which buffers the document as well (jsonvalue_go126.go).
func TestJSONToValueCopiesALargeStringOnce(t *testing.T) {
	data := []byte(`[{"url":"` + strings.Repeat("QUJD", 1<<20) + `"}]`) // 4 MiB string
	allocs := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonToValue(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	assert.Less(t, allocs.AllocedBytesPerOp(), int64(len(data))*3/2, "the string, not a buffered copy of the document as well")
}
