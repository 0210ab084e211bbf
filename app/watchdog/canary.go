package watchdog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"

	"github.com/google/uuid"

	"github.com/smg-go/smg/adapters/engine/grpcengine"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// canaryPrompt is the canary's prompt text; canaryTokenID its token id on gRPC (no
// tokenizer is needed for one token).
const (
	canaryPrompt  = "ping"
	canaryTokenID = 1
)

// errNoTransport is a canary for a worker whose transport has no canary client yet.
var errNoTransport = errors.New("no canary client for the worker's transport")

// canary sends l one synthetic 1-token generate within ctx and returns nil when the engine
// answered: any answer that is not a 5xx, 408 or transport failure passes (an engine that
// refuses the canary's form quickly is alive). SGLang and TokenSpeed prefill/decode legs
// carry the warmup's fake bootstrap host (wire.FakeBootstrapHost), so no peer is involved;
// vLLM gets a plain completion without kv_transfer_params.
func (w *Watchdog) canary(ctx context.Context, l *worker.Live) error {
	id := wire.CanaryRequestIDPrefix + uuid.NewString()
	if l.Mode == worker.ConnGRPC {
		b := w.grpcGen.Load()
		if b == nil {
			return errNoTransport
		}
		return grpcCanary(ctx, b.g, l, id)
	}
	b := w.httpEngine.Load()
	if b == nil {
		return errNoTransport
	}
	return httpCanary(ctx, b.e, l, id)
}

// pdLeg reports whether l runs a PD leg that needs the fake bootstrap host.
func pdLeg(l *worker.Live) bool { return l.Role == worker.RolePrefill || l.Role == worker.RoleDecode }

func httpCanary(ctx context.Context, e ports.EngineClient, l *worker.Live, id string) error {
	hdr := http.Header{}
	hdr.Set(wire.HeaderRequestID, id)
	var path string
	var body map[string]any
	if l.Runtime == worker.RuntimeVLLM {
		path = wire.PathCompletions
		body = map[string]any{"prompt": canaryPrompt, "max_tokens": 1, "stream": false}
		if len(l.Models) > 0 {
			body["model"] = l.Models[0]
		}
	} else {
		path = wire.PathGenerate
		body = map[string]any{"text": canaryPrompt, "rid": id, "stream": false,
			"sampling_params": map[string]any{"max_new_tokens": 1, "temperature": 0}}
		if pdLeg(l) {
			body[wire.FieldBootstrapHost] = wire.FakeBootstrapHost
			body[wire.FieldBootstrapRoom] = rand.Int64N(1 << 31)
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := e.Send(ctx, ports.LegRequest{Worker: l, Path: path, Body: raw, Header: hdr})
	if err != nil {
		return fmt.Errorf("canary: %w", err)
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20)); err != nil {
		return fmt.Errorf("canary body: %w", err)
	}
	return verdictOf(resp.Status)
}

func grpcCanary(ctx context.Context, g ports.GRPCGenerator, l *worker.Live, id string) error {
	one := uint32(1)
	leg := ports.GRPCLeg{Worker: l, RequestID: id, Text: canaryPrompt, InputIDs: []uint32{canaryTokenID},
		Sampling: ports.GRPCSampling{MaxTokens: &one}}
	if pdLeg(l) && (l.Runtime == worker.RuntimeSGLang || l.Runtime == worker.RuntimeTokenSpeed) {
		port := 0
		if l.BootstrapPort != nil {
			port = *l.BootstrapPort
		}
		leg.Rendezvous = &ports.GRPCRendezvous{Host: wire.FakeBootstrapHost, Port: port, Room: rand.Int64N(1 << 31)}
	}
	st, err := g.Generate(ctx, leg)
	if err != nil {
		return grpcVerdict(err)
	}
	defer st.Close()
	for {
		ev, err := st.Recv()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return errors.New("canary: stream ended before its complete")
			}
			return grpcVerdict(err)
		}
		if ev.Complete {
			return nil
		}
	}
}

func grpcVerdict(err error) error {
	st, msg := grpcengine.ErrorStatus(err)
	if e := verdictOf(st); e != nil {
		return fmt.Errorf("canary: %s", msg)
	}
	return nil
}

// verdictOf passes any answer but a 5xx or 408.
func verdictOf(status int) error {
	if status >= 500 || status == http.StatusRequestTimeout || status <= 0 {
		return fmt.Errorf("canary: status %d", status)
	}
	return nil
}
