package watchdog

import (
	"context"
	"errors"
	"io"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// stallAbortReason is the reason of the Abort RPC a cut gRPC leg gets.
const stallAbortReason = "Stalled: no progress (gateway watchdog)"

// WrapGenerator returns next with every Generate stream tracked by the watchdog (each item
// is progress; the stream's end is an answer), and keeps next for the gRPC canaries. A leg
// the watchdog cuts gets its engine's Abort RPC and fails with stallError. A nil Watchdog
// returns next.
func (w *Watchdog) WrapGenerator(next ports.GRPCGenerator) ports.GRPCGenerator {
	if w == nil {
		return next
	}
	w.grpcGen.Store(&generatorBox{next})
	return &generator{w: w, next: next}
}

type generator struct {
	w    *Watchdog
	next ports.GRPCGenerator
}

// Generate implements ports.GRPCGenerator.
func (gn *generator) Generate(ctx context.Context, l ports.GRPCLeg) (ports.GRPCStream, error) {
	if l.Worker == nil {
		return gn.next.Generate(ctx, l)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	s := &stream{g: leg{gen: gn, rid: l.RequestID}}
	g := &s.g
	gn.w.begin(g, l.Worker, cancel)
	st, err := gn.next.Generate(ctx, l)
	if err != nil {
		g.end(false)
		if g.stalled.Load() {
			err = g.stall()
		}
		cancel(nil)
		return nil, err
	}
	s.st = st
	return s, nil
}

// abort sends the Abort RPC of request id rid to l, in the background, for a cut leg.
func (gn *generator) abort(l *worker.Live, rid string) {
	gn.w.bg.Add(1)
	go func() {
		defer gn.w.bg.Done()
		_ = gn.next.Abort(context.Background(), l.Worker, stallAbortReason, rid)
	}()
}

// Abort implements ports.GRPCGenerator.
func (gn *generator) Abort(ctx context.Context, w worker.Worker, reason string, ids ...string) error {
	return gn.next.Abort(ctx, w, reason, ids...)
}

// stream is a tracked Generate stream; its leg lives in it (one allocation per leg).
type stream struct {
	st ports.GRPCStream
	g  leg
}

func (s *stream) Recv() (ports.GRPCEvent, error) {
	ev, err := s.st.Recv()
	if s.g.stalled.Load() {
		// The watchdog cut the leg: what the engine sends after the cut is not an answer.
		// SGLang answers the Abort RPC with a complete (finish_reason "abort") that can
		// arrive before the cancelled stream ends; taken as the leg's answer, it ended the
		// decode while its prefill waited out the handoff timeout.
		s.g.end(false)
		return ports.GRPCEvent{}, s.g.stall()
	}
	if err != nil {
		s.g.end(errors.Is(err, io.EOF))
		if !errors.Is(err, io.EOF) && s.g.stalled.Load() {
			err = s.g.stall()
		}
		return ev, err
	}
	s.g.progress(true)
	return ev, nil
}

func (s *stream) Close() {
	s.g.end(false)
	s.st.Close()
	s.g.cancel(nil)
}
