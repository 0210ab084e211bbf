package kvevents

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	commonpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/common"
	"github.com/smg-go/smg/domain/kvevent"
	"github.com/smg-go/smg/ports"
)

// KvEventsClient is the SubscribeKvEvents RPC as every engine service of smg's protos
// declares it (SglangScheduler, VllmEngine, TokenSpeedScheduler; reference §3.1): the
// generated clients in adapters/engine/grpcengine/pb satisfy it, e.g.
// vllmpb.NewVllmEngineClient(pool.Conn(w)).
type KvEventsClient interface {
	SubscribeKvEvents(ctx context.Context, in *commonpb.SubscribeKvEventsRequest, opts ...grpc.CallOption) (grpc.ServerStreamingClient[commonpb.KvEventBatch], error)
}

// ErrDisabled is returned by GRPC.Run when the engine does not implement
// SubscribeKvEvents: the worker has no event stream and stays on approximate routing.
var ErrDisabled = errors.New("kvevents: engine does not implement SubscribeKvEvents")

// GRPCConfig names one gRPC worker's event stream and where its events go.
type GRPCConfig struct {
	// Client is the worker's engine client. Required.
	Client KvEventsClient
	// Name identifies the worker in logs and Health.Endpoint (its URL).
	Name string
	// Sink receives batches and resets. Required.
	Sink ports.KVEventSink
	Options
}

// GRPC consumes a worker's SubscribeKvEvents stream with SMG kv_event_monitor's
// semantics (reference §3.3): subscribe with start_sequence_number = the last sequence
// applied (0 = from the current state); skip batches at or below it; on a gap drop the
// stream and resubscribe at once from the last sequence so the server replays; OutOfRange
// or DataLoss reset the worker's entries and resubscribe from the current state;
// Unimplemented disables the subscription. Other failures resubscribe with backoff.
type GRPC struct {
	cfg GRPCConfig
	st  *state

	have bool
	last uint64
}

// NewGRPC validates cfg and builds a subscriber; Run starts it.
func NewGRPC(cfg GRPCConfig) (*GRPC, error) {
	if cfg.Client == nil || cfg.Sink == nil {
		return nil, errors.New("kvevents: GRPCConfig.Client and Sink are required")
	}
	cfg.Options = cfg.Options.withDefaults()
	return &GRPC{cfg: cfg, st: newState(cfg.Options, "grpc", cfg.Name)}, nil
}

// Health returns the subscription's current state. Safe for concurrent use.
func (g *GRPC) Health() Health { return g.st.snapshot() }

// outcome is how a stream session ended.
type outcome int

const (
	retryLater outcome = iota // transport failure: back off
	retryNow                  // gap or reset: resubscribe at once
	disabled                  // Unimplemented
)

// Run consumes the stream until ctx ends (returning ctx's error) or the engine answers
// Unimplemented (returning ErrDisabled).
func (g *GRPC) Run(ctx context.Context) error {
	bo := g.cfg.backoff()
	replay := false
	for ctx.Err() == nil {
		out, asked := g.session(ctx, bo, replay)
		replay = asked
		switch {
		case ctx.Err() != nil:
		case out == disabled:
			g.st.update(func(h *Health) { h.Disabled, h.Connected = true, false })
			g.st.log.Info("kv events: engine does not implement SubscribeKvEvents; approximate routing only")
			return ErrDisabled
		case out == retryLater:
			select {
			case <-ctx.Done():
			case <-time.After(bo.NextBackOff()):
			}
		}
	}
	return ctx.Err()
}

// session runs one stream. replay says the previous session ended on a gap, so this one
// asks the server to replay it. It returns how the stream ended and whether the next
// session is a replay request.
//
// Sequence rules: the next number is applied; the last one again is a duplicate (servers
// may resume inclusively); a smaller one means the engine restarted (reset); a larger one
// is a gap, resubscribed for replay once, then reset if the replay does not cover it.
func (g *GRPC) session(ctx context.Context, bo interface{ Reset() }, replay bool) (outcome, bool) {
	if g.have && g.last == 0 {
		// 0 asks for the current state: batches after seq 0 could be missed.
		g.reset(kvevent.ResetResume, "no cursor to resume from")
	}
	start := g.last
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stream, err := g.cfg.Client.SubscribeKvEvents(sctx, &commonpb.SubscribeKvEventsRequest{StartSequenceNumber: start})
	if err != nil {
		return g.failed(ctx, err, false, start), false
	}
	// Headers arrive when the server accepted the subscription (or with its first batch);
	// none at all means the call ended at once, and Recv returns its status.
	up := false
	connected := func() {
		if !up {
			up = true
			bo.Reset()
			g.st.connected(time.Now())
		}
	}
	md, err := stream.Header()
	if err != nil {
		return g.failed(ctx, err, false, start), false
	}
	if md != nil {
		connected()
	}
	applied := 0
	for {
		pb, err := stream.Recv()
		if err != nil {
			return g.failed(ctx, err, up, start), false
		}
		connected()
		seq := pb.GetSequenceNumber()
		switch {
		case !g.have || seq == g.last+1:
		case seq == g.last:
			continue
		case seq < g.last:
			g.reset(kvevent.ResetRestart, fmt.Sprintf("sequence went back from %d to %d", g.last, seq))
		default:
			g.st.update(func(h *Health) { h.Gaps++ })
			if !replay || applied > 0 {
				g.st.log.Info("kv events: sequence gap, resubscribing for replay", "last", g.last, "got", seq)
				g.st.update(func(h *Health) { h.Connected = false })
				return retryNow, true
			}
			g.reset(kvevent.ResetGap, fmt.Sprintf("replay from %d resumed at %d", start, seq))
		}
		if replay && applied == 0 && g.have {
			g.st.update(func(h *Health) { h.Replays++ })
		}
		applied++
		b := fromProto(pb)
		g.have, g.last = true, seq
		g.st.applied(seq, b.Timestamp, time.Now()) // counted first, as in the ZMQ feed
		g.cfg.Sink.ApplyKVBatch(b)
	}
}

// failed classifies a subscribe or stream error. OutOfRange and DataLoss reset the
// worker and resubscribe at once, unless the failed request already started from the
// current state (then backing off avoids a tight loop against a broken server).
func (g *GRPC) failed(ctx context.Context, err error, wasConnected bool, start uint64) outcome {
	if ctx.Err() != nil {
		return retryLater
	}
	code := status.Code(err)
	switch code {
	case codes.Unimplemented:
		return disabled
	case codes.OutOfRange, codes.DataLoss:
		r := kvevent.ResetOutOfRange
		if code == codes.DataLoss {
			r = kvevent.ResetDataLoss
		}
		g.reset(r, err.Error())
		g.st.update(func(h *Health) { h.Connected, h.LastError = false, err.Error() })
		if start == 0 && !wasConnected {
			return retryLater
		}
		return retryNow
	}
	if wasConnected {
		g.st.disconnected(err)
	} else {
		g.st.dialFailed(err)
	}
	return retryLater
}

func (g *GRPC) reset(r kvevent.ResetReason, why string) {
	g.have, g.last = false, 0
	g.st.update(func(h *Health) { h.Resets++; h.HasSeq = false })
	g.st.log.Warn("kv events: dropping the worker's entries", "reason", r, "detail", why)
	g.cfg.Sink.ResetKV(r)
}
