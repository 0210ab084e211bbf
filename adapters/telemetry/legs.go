package telemetry

import (
	"context"
	"io"
	"strconv"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// Span attribute keys of the prefill and decode leg spans.
const (
	AttrWorkerID      = "smg.worker.id"
	AttrWorkerRole    = "smg.worker.role"
	AttrRuntime       = "smg.runtime"
	AttrKVConnector   = "smg.kv.connector"
	AttrKVMode        = "smg.kv.mode"
	AttrBootstrapRoom = "smg.bootstrap_room"
	AttrTransferID    = "smg.kv.transfer_id"
	AttrStatus        = "http.response.status_code"
	AttrOutcome       = "smg.outcome"
	AttrFirstByteMS   = "smg.leg.first_byte_ms"
	AttrTTFTMS        = "smg.ttft_ms"
	// AttrPDDecision and AttrPDDecisionReason are set on the server span of a request the
	// selective-PD decision ran for (disaggregated or decode_only, and why).
	AttrPDDecision       = "smg.pd.decision"
	AttrPDDecisionReason = "smg.pd.decision_reason"
)

// TraceLegs wraps an engine client so every leg sent gets a client span named after the
// worker's role ("prefill", "decode"; "regular" for token counting), a child of the
// request's server span, carrying the worker id, runtime, KV connector, the handoff mode the
// body carries (bootstrap for SGLang rooms, nixl/mooncake/moriio from kv_transfer_params,
// passthrough without them), the bootstrap room or transfer id, the status and an outcome
// (ok, http_error, transport_error, body_error, cancelled). The span ends when the leg's
// body is closed. Decode spans also carry the time to the first body byte
// (smg.leg.first_byte_ms) and smg.ttft_ms, measured from the request's arrival at the
// gateway (ports.RequestInfo.Start), which is the time the client waits for its first
// token; the same TTFT goes to the RequestInfo for the access log. The leg's worker ids are
// recorded in the RequestInfo whether or not tp records spans.
func TraceLegs(next ports.EngineClient, tp trace.TracerProvider) ports.EngineClient {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	_, off := tp.(noop.TracerProvider)
	return &tracedEngine{next: next, tracer: tp.Tracer("github.com/smg-go/smg/legs"), off: off}
}

type tracedEngine struct {
	next   ports.EngineClient
	tracer trace.Tracer
	// off: tp is the no-op provider (tracing off). A leg whose context carries no span
	// context then gets no span at all (a no-op span would record nothing and inject no
	// trace context, but its start and attributes cost about six allocations per leg).
	off bool
}

func (t *tracedEngine) Send(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	ri := ports.RequestInfoFrom(ctx)
	role := "leg"
	if req.Worker != nil {
		role = string(req.Worker.Role)
		if req.Leg != "" {
			role = req.Leg
		}
		ri.SetLeg(role, req.Worker.ID, string(req.Worker.Runtime))
	}
	decode := role == string(worker.RoleDecode)
	if t.off && !trace.SpanContextFromContext(ctx).IsValid() {
		resp, err := t.next.Send(ctx, req)
		if err != nil || !decode || resp.Status >= 400 {
			return resp, err // no span to end and no first token to time
		}
		resp.Body = &legBody{ReadCloser: resp.Body, ctx: ctx, ri: ri, decode: true}
		return resp, nil
	}
	ctx, span := t.tracer.Start(ctx, role, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() && req.Worker != nil {
		span.SetAttributes(legAttrs(req.Worker, req.Body)...)
	}
	sent := time.Now()
	resp, err := t.next.Send(ctx, req)
	if err != nil {
		outcome := "transport_error"
		if ctx.Err() != nil {
			outcome = "cancelled"
		}
		span.SetAttributes(attribute.String(AttrOutcome, outcome))
		span.SetStatus(codes.Error, err.Error())
		span.End()
		return resp, err
	}
	span.SetAttributes(attribute.Int(AttrStatus, resp.Status))
	if resp.Status >= 400 {
		span.SetAttributes(attribute.String(AttrOutcome, "http_error"))
		span.SetStatus(codes.Error, "engine answered "+strconv.Itoa(resp.Status))
	}
	resp.Body = &legBody{ReadCloser: resp.Body, span: span, ctx: ctx, ri: ri, sent: sent,
		decode: decode, failed: resp.Status >= 400}
	return resp, nil
}

// legAttrs describes the leg from its worker and body (parsed only for recorded spans).
func legAttrs(w *worker.Live, body []byte) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(AttrWorkerID, w.ID),
		attribute.String(AttrWorkerRole, string(w.Role)),
		attribute.String(AttrRuntime, string(w.Runtime)),
	}
	if w.KVConnector != "" {
		attrs = append(attrs, attribute.String(AttrKVConnector, w.KVConnector))
	}
	o, err := jsonbody.Parse(body)
	if err != nil {
		return attrs
	}
	if raw, ok := o.Get(wire.FieldBootstrapRoom); ok {
		return append(attrs, attribute.String(AttrKVMode, "bootstrap"), attribute.String(AttrBootstrapRoom, string(raw)))
	}
	raw, ok := o.Get(wire.FieldKVTransferParams)
	if !ok || jsonbody.IsNull(raw) {
		if w.Runtime == worker.RuntimeVLLM {
			attrs = append(attrs, attribute.String(AttrKVMode, wire.ModePassthrough))
		}
		return attrs
	}
	kv, err := jsonbody.Parse(raw)
	if err != nil {
		return attrs
	}
	mode := wire.ModeNixl
	switch {
	case w.KVConnector == wire.ConnectorMoRIIO:
		mode = wire.ModeMoRIIO
	case has(kv, wire.KVRemoteBootstrapAddr) || w.KVConnector == wire.ConnectorMooncake:
		mode = wire.ModeMooncake
	}
	attrs = append(attrs, attribute.String(AttrKVMode, mode))
	if id, ok := kv.Get(wire.KVTransferID); ok {
		if s, ok := jsonbody.String(id); ok {
			attrs = append(attrs, attribute.String(AttrTransferID, s))
		}
	}
	return attrs
}

func has(o *jsonbody.Object, key string) bool { _, ok := o.Get(key); return ok }

// legBody ends the leg span when the body is closed, and marks the first decode byte.
type legBody struct {
	io.ReadCloser
	span   trace.Span // nil: untraced (tracing off), only the RequestInfo is kept
	ctx    context.Context
	ri     *ports.RequestInfo
	sent   time.Time
	decode bool
	failed bool

	first   bool
	eof     bool
	readErr error
	once    sync.Once
}

func (b *legBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 && !b.first {
		b.first = true
		now := time.Now()
		if b.span != nil {
			b.span.SetAttributes(attribute.Float64(AttrFirstByteMS, ms(now.Sub(b.sent))))
		}
		if b.decode && !b.failed {
			if b.ri != nil && !b.ri.Start.IsZero() {
				ttft := now.Sub(b.ri.Start)
				b.ri.FirstToken(ttft)
				if b.span != nil {
					b.span.SetAttributes(attribute.Float64(AttrTTFTMS, ms(ttft)))
				}
			}
		}
	}
	if err == io.EOF {
		b.eof = true
	} else if err != nil && b.readErr == nil {
		b.readErr = err
	}
	return n, err
}

func (b *legBody) Close() error {
	err := b.ReadCloser.Close()
	if b.span == nil {
		return err // untraced leg (tracing off): nothing to end
	}
	b.once.Do(func() {
		switch {
		case b.failed:
		case b.eof && b.readErr == nil:
			b.span.SetAttributes(attribute.String(AttrOutcome, "ok"))
		case b.ctx.Err() != nil:
			b.span.SetAttributes(attribute.String(AttrOutcome, "cancelled"))
		case b.readErr != nil:
			b.span.SetAttributes(attribute.String(AttrOutcome, "body_error"))
			b.span.SetStatus(codes.Error, b.readErr.Error())
		default: // closed by the gateway before its end (e.g. a fan-in that had enough)
			b.span.SetAttributes(attribute.String(AttrOutcome, "closed_early"))
		}
		b.span.End()
	})
	return err
}
