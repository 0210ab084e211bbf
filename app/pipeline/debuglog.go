package pipeline

import (
	"context"
	"log/slog"

	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/worker"
)

// logPair writes the debug line of a selected gRPC pair, the HTTP dispatcher's "PD pair
// selected" with the same keys (route, prefill, decode, rooms: the bootstrap rooms of the
// units, none for vLLM), so the seed's debug recipe (RUST_LOG=smg=info,smg::routers=debug,
// "Debug Logging") gives the same line on both transports.
func (pl *Pipeline) logPair(ctx context.Context, rq *handoff.Request, p, dc *worker.Live, units []unit) {
	if !pl.log.Enabled(ctx, slog.LevelDebug) {
		return
	}
	rooms := make([]uint64, 0, len(units))
	for i := range units {
		if rv := units[i].pLeg.Rendezvous; rv != nil {
			rooms = append(rooms, uint64(rv.Room))
		}
	}
	pl.log.DebugContext(ctx, "PD pair selected", "route", rq.Route.String(), "prefill", p.DisplayURL(),
		"decode", dc.DisplayURL(), "rooms", rooms)
}
