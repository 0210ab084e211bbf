package health

import (
	"context"
	"time"

	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

type grpcBox struct{ e ports.GRPCEngines }

// FactsRefresher re-reads a gRPC worker's server and model info and applies what changed
// (registry.Service.RefreshFacts), bounded by ctx.
type FactsRefresher func(ctx context.Context, w *worker.Live)

// SetFactsRefresher installs the refresher a successful gRPC probe of a ready, not_ready or
// failed worker calls (before the result is applied) instead of re-reading the KV engine id
// alone; nil removes it. Call it before Start.
func (c *Checker) SetFactsRefresher(f FactsRefresher) {
	if f == nil {
		c.facts.Store(nil)
		return
	}
	c.facts.Store(&f)
}

// SetGRPC installs the gRPC engine client that probes grpc:// and grpcs:// workers with
// their runtime's HealthCheck RPC (nil = such workers fail every probe, as before). Call it
// before Start.
func (c *Checker) SetGRPC(e ports.GRPCEngines) {
	if e == nil {
		c.grpc.Store(nil)
		return
	}
	c.grpc.Store(&grpcBox{e})
}

// probeGRPC is one gRPC health probe under the same state machine as HTTP: the runtime's
// HealthCheck bounded by the worker's probe timeout. After a successful probe of a worker
// launched ready, not_ready or failed, the facts refresher (SetFactsRefresher), when one is
// installed, re-reads its server and model info before the result is applied. Without one, a prefill or
// decode with a kv_connector re-reads its KV engine id before the result is applied (so
// before it is promoted), depending on the status the worker had when the probe was
// launched (grpc.md §1.10): failed, not_ready and ready always (the engine may be a new
// process: a vLLM restarted on its URL within one interval gets a new engine id and still
// probes healthy), pending only without an id yet, draining never.
func (c *Checker) probeGRPC(ctx context.Context, e ports.GRPCEngines, w *worker.Live) error {
	launched := w.Status()
	timeout := c.timeout(w)
	pctx, cancel := context.WithTimeout(ctx, timeout)
	err := e.HealthCheck(pctx, w.Worker)
	cancel()
	if err != nil {
		return err
	}
	if f := c.facts.Load(); f != nil {
		if launched == worker.StatusReady || launched == worker.StatusNotReady || launched == worker.StatusFailed {
			rctx, cancel := context.WithTimeout(ctx, max(timeout, time.Second))
			(*f)(rctx, w)
			cancel()
			return nil
		}
	}
	if refreshWanted(w, launched) {
		c.refreshEngineID(ctx, e, w, max(timeout, time.Second))
	}
	return nil
}

func refreshWanted(w *worker.Live, launched worker.Status) bool {
	if w.Mode != worker.ConnGRPC || w.KVConnector == "" ||
		(w.Role != worker.RolePrefill && w.Role != worker.RoleDecode) {
		return false
	}
	switch launched {
	case worker.StatusFailed, worker.StatusNotReady, worker.StatusReady:
		return true
	case worker.StatusPending:
		return w.EngineID() == ""
	}
	return false
}

// refreshEngineID reads the engine id bounded by timeout: a read with an id replaces the
// live id (logged when it changed) and confirms it; a read without one keeps the previous
// id and confirms; a failed or expired read marks it unconfirmed, to be retried on the
// next probe. A read in progress leaves the flag as it was: ready workers are re-read on
// every probe, and the flag must not flap while they are.
func (c *Checker) refreshEngineID(ctx context.Context, e ports.GRPCEngines, w *worker.Live, timeout time.Duration) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	id, err := e.EngineID(rctx, w.Worker)
	switch {
	case err != nil:
		w.SetEngineIDConfirmed(false)
		c.log.Warn("re-reading the KV engine id failed; retrying on the next probe",
			"worker", w.URL, "worker_id", w.ID, "error", err.Error())
	case id == "":
		w.SetEngineIDConfirmed(true)
	default:
		old := w.EngineID()
		if w.SetEngineID(id) {
			c.log.Info("KV engine id changed", "worker", w.URL, "worker_id", w.ID, "from", old, "to", id)
		}
	}
}
