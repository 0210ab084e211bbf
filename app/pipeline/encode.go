package pipeline

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// encodeJob is one EPD encode job: an EncodeRequest for a single media item (with its
// pixels) to its encode worker, under the item's room.
type encodeJob struct {
	mm      *ports.GRPCMultimodal
	room    int64
	w       *worker.Live
	release func()
}

// encodeTimeout bounds one fire-and-forget Encode RPC when --prefill-timeout-secs is 0.
const encodeTimeout = 60 * time.Second

// planEncode is the EPD encode plan (grpc.md §1.13): in EPD mode, every gateway-prepared
// media item of a unit's prefill leg gets its own encode worker (the --encode-policy pick,
// keyed by the item's content hash) and its own room, uniform in [0, 2^63−1); the prefill
// leg gets encode_bootstrap_info {item_index, the encode worker's bootstrap host, its port
// or 8998, room}. A text-only request, or outside EPD, plans nothing. Errors (before any
// leg is contacted): 501 not_supported for a non-TokenSpeed pair, 503 no_available_workers
// for the encode leg. The jobs' in-flight slots are held until each job's RPC ends.
func (pl *Pipeline) planEncode(j *job, proto protocol, units []unit) ([]encodeJob, error) {
	if !pl.cfg.EPDDisaggregation || j.mm == nil {
		return nil, nil
	}
	if j.mm.workerSide {
		return nil, errs.New(http.StatusBadRequest, wire.CodeMultimodalNotSupported,
			"EPD encode workers take gateway-prepared media only; this gateway runs --mm-processing worker")
	}
	if proto != parallelTokenSpeed {
		return nil, errs.New(http.StatusNotImplemented, wire.CodeNotSupported,
			"EPD encode dispatch supports TokenSpeed gRPC prefills only (the selected pair runs %s)", units[0].pLeg.Worker.Runtime)
	}
	if pl.encoders == nil {
		return nil, errs.NoAvailableWorkers("encode")
	}
	var jobs []encodeJob
	fail := func(err error) ([]encodeJob, error) {
		releaseJobs(jobs)
		return nil, err
	}
	for ui := range units {
		u := &units[ui]
		mm := u.pLeg.MM
		if mm == nil || len(mm.Items) == 0 {
			continue
		}
		for i, it := range mm.Items {
			if it.Pixels == nil {
				return fail(errs.New(http.StatusBadRequest, wire.CodeMultimodalNotSupported,
					"EPD: media item %d has no prepared pixels for the encode workers", i))
			}
			w, rel, err := pl.encoders.PickEncode(j.name, it.Hash)
			if err != nil {
				return fail(err)
			}
			port := DefaultBootstrapPort
			if w.BootstrapPort != nil && *w.BootstrapPort > 0 {
				port = *w.BootstrapPort
			}
			room := rand.Int64N(math.MaxInt64)
			one := *mm
			one.Items = []ports.GRPCMediaItem{it}
			jobs = append(jobs, encodeJob{mm: &one, room: room, w: w, release: rel})
			u.pLeg.EncodeItems = append(u.pLeg.EncodeItems, ports.GRPCEncodeItem{ItemIndex: uint32(i), Host: w.BootstrapHost(), Port: port, Room: room})
		}
	}
	return jobs, nil
}

// sendEncodes dispatches the jobs in the background, not awaited (fire-and-forget): a
// failed RPC or accepted=false is only logged, and the prefill's embedding timeout fails
// the request. Then every prefill leg that has encode rendezvous loses its pixels (the
// encode workers have them). Each attempt sends its own jobs once, after admission; a
// retry plans fresh rooms and jobs and never resends an earlier attempt's.
func (pl *Pipeline) sendEncodes(ctx context.Context, jobs []encodeJob, units []unit) {
	if len(jobs) == 0 {
		return
	}
	timeout := pl.cfg.PrefillTimeout
	if timeout <= 0 {
		timeout = encodeTimeout
	}
	bg := context.WithoutCancel(ctx)
	for _, jb := range jobs {
		id := "encode-" + pl.newUUID()
		pl.bg.Add(1)
		go func() {
			defer pl.bg.Done()
			defer jb.release()
			rctx, cancel := context.WithTimeout(bg, timeout)
			defer cancel()
			ok, err := pl.encoder.Encode(rctx, jb.w.Worker, id, jb.mm, jb.room)
			switch {
			case err != nil:
				pl.log.WarnContext(bg, "EPD encode job failed; the prefill's embedding wait will fail the request",
					"encode_worker", jb.w.Worker.DisplayURL(), "engine_request_id", id, "room", jb.room, "error", err.Error())
			case !ok:
				pl.log.WarnContext(bg, "EPD encode worker did not accept the job", "encode_worker", jb.w.Worker.DisplayURL(),
					"engine_request_id", id, "room", jb.room)
			}
		}()
	}
	for i := range units {
		if len(units[i].pLeg.EncodeItems) > 0 && units[i].pLeg.MM != nil {
			units[i].pLeg.MM = pixelFree(units[i].pLeg.MM)
		}
	}
}

func releaseJobs(jobs []encodeJob) {
	for _, jb := range jobs {
		jb.release()
	}
}
