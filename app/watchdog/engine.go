package watchdog

import (
	"context"
	"errors"
	"io"

	"github.com/smg-go/smg/ports"
)

// WrapEngine returns next with every leg tracked by the watchdog (the response head and
// every body read are progress; the body's end is an answer), and keeps next for the HTTP
// canaries. A nil Watchdog returns next.
func (w *Watchdog) WrapEngine(next ports.EngineClient) ports.EngineClient {
	if w == nil {
		return next
	}
	w.httpEngine.Store(&engineBox{next})
	return &engine{w: w, next: next}
}

type engine struct {
	w    *Watchdog
	next ports.EngineClient
}

// Send implements ports.EngineClient. A leg the watchdog cuts fails with stallError (an
// errs.ErrUnresponsive), from Send or from a body read.
func (e *engine) Send(ctx context.Context, req ports.LegRequest) (*ports.LegResponse, error) {
	if req.Worker == nil {
		return e.next.Send(ctx, req)
	}
	ctx, cancel := context.WithCancelCause(ctx)
	b := &body{}
	g := &b.g
	e.w.begin(g, req.Worker, cancel)
	resp, err := e.next.Send(ctx, req)
	if err != nil {
		g.end(false)
		if g.stalled.Load() {
			err = g.stall()
		}
		cancel(nil)
		return nil, err
	}
	g.progress(false)
	b.rc = resp.Body
	resp.Body = b
	return resp, nil
}

// body tracks a response body: each read with bytes is delivered progress, EOF is the
// answer, Close ends the leg. Its leg lives in it (one allocation per leg).
type body struct {
	rc io.ReadCloser
	g  leg
}

func (b *body) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.g.progress(true)
	}
	if err != nil {
		b.g.end(errors.Is(err, io.EOF))
		if !errors.Is(err, io.EOF) && b.g.stalled.Load() {
			err = b.g.stall()
		}
	}
	return n, err
}

func (b *body) Close() error {
	b.g.end(false)
	err := b.rc.Close()
	b.g.cancel(nil)
	return err
}
