package admission_test

import (
	"context"
	"testing"
	"time"

	"github.com/smg-go/smg/app/admission"
)

// BenchmarkAdmitRelease is one PD request's admission: claim a slot on a decode worker with
// a window (in-memory store), hold it with its renewal timer, release it.
func BenchmarkAdmitRelease(b *testing.B) {
	a := admission.New(newSlots(10*time.Second), admission.Options{})
	d := window("1000000")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ReportAllocs()
	for b.Loop() {
		release, err := a.Admit(ctx, d, 1)
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
}
