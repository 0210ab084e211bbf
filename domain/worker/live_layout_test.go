package worker

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// What a selection reads on a candidate lies in Live's first cache line, and Live's size is
// an odd number of lines, so that line is the object's first and Lives use every cache set.
func TestLiveHotFieldsShareTheFirstCacheLine(t *testing.T) {
	var l Live
	hot := map[string]uintptr{
		"status": unsafe.Offsetof(l.status) + unsafe.Sizeof(l.status),
		"load":   unsafe.Offsetof(l.load) + unsafe.Sizeof(l.load),
		"prompt": unsafe.Offsetof(l.promptTok) + unsafe.Sizeof(l.promptTok),
		"decode": unsafe.Offsetof(l.decodeTok) + unsafe.Sizeof(l.decodeTok),
		"remote": unsafe.Offsetof(l.remoteTok) + unsafe.Sizeof(l.remoteTok),
		"boards": unsafe.Offsetof(l.boards) + unsafe.Sizeof(l.boards),
		"gate":   unsafe.Offsetof(l.gate) + unsafe.Sizeof(l.gate),
		"stall":  unsafe.Offsetof(l.suspect) + unsafe.Sizeof(l.suspect),
	}
	for name, end := range hot {
		assert.LessOrEqual(t, end, uintptr(cacheLine), name)
	}
	assert.Equal(t, uintptr(cacheLine), unsafe.Offsetof(l.Worker))
	assert.Zero(t, unsafe.Sizeof(l)%cacheLine, "Live is %d bytes", unsafe.Sizeof(l))
	assert.Equal(t, uintptr(1), unsafe.Sizeof(l)/cacheLine%2, "Live is %d bytes: an even number of lines", unsafe.Sizeof(l))
}

func TestStatusRoundTripsEveryValue(t *testing.T) {
	l := NewLive(Worker{URL: "http://w:1"}, StatusPending)
	for _, s := range []Status{StatusReady, StatusNotReady, StatusFailed, StatusDraining, "", "custom", StatusPending, "custom2", StatusReady} {
		e := AvailabilityEpoch()
		prev := l.Status()
		l.SetStatus(s)
		require.Equal(t, s, l.Status())
		assert.Equal(t, s == StatusReady, l.Healthy(), "Healthy for %q", s)
		assert.Equal(t, prev != s, AvailabilityEpoch() != e, "epoch moved for %q after %q", s, prev)
	}
	// An equal status given as a different string value is the same status.
	l.SetStatus(Status(string([]byte("custom"))))
	e := AvailabilityEpoch()
	l.SetStatus(Status(string([]byte("custom"))))
	assert.Equal(t, e, AvailabilityEpoch())
	l.SetStatus(Status(string([]byte("ready"))))
	assert.True(t, l.Healthy(), "a ready built at run time is the table's")
	assert.Equal(t, StatusReady, statuses[readyIdx])
	assert.Equal(t, Status(""), (&Live{}).Status())
	assert.False(t, (&Live{}).Healthy())
}
