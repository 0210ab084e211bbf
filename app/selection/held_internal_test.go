package selection

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// A selection allocates one held: kept in the 80-byte size class.
func TestHeldFitsEightyBytes(t *testing.T) {
	assert.LessOrEqual(t, unsafe.Sizeof(held{}), uintptr(80))
}
