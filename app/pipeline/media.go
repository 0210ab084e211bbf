package pipeline

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/smg-go/smg/adapters/mediafetch"
	"github.com/smg-go/smg/app/config"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/media"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// ImagePadToken is the placeholder the Qwen2-VL family's chat template renders once per
// image (between <|vision_start|> and <|vision_end|>); the gateway expands it to the
// image's token count.
const ImagePadToken = "<|image_pad|>"

// mmJob is the media of a request: gateway-prepared items with their placeholders in the
// expanded prompt, or (worker-side processing) the references as sent.
type mmJob struct {
	items      []media.Item
	places     []media.Placeholder
	refs       []media.Ref
	padID      uint32
	workerSide bool
	// hold is the media budget the request keeps until its attempt ends (nil: none).
	hold *mediaHold
}

// mediaPrep fetches media, keeps one image processor per model directory and bounds the
// preparation (mediaLimits).
type mediaPrep struct {
	fetch  ports.MediaFetcher
	procs  sync.Map // dir → *media.Processor (nil entry: no preprocessor_config.json there)
	cache  *mediaCache
	limits mediaLimits
}

func newMediaPrep(f ports.MediaFetcher, cfg config.Config) *mediaPrep {
	if f == nil {
		f = mediafetch.New(mediafetch.Options{})
	}
	return &mediaPrep{fetch: f, cache: newMediaCache(DefaultMediaCacheBytes), limits: newMediaLimits(cfg)}
}

// mediaWaitErr is the request's error for a failed media group: a client error as it is,
// the caller's cancellation joined, anything else (a fetch that failed) 400 invalid_request.
func mediaWaitErr(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errs.As(err); ok {
		return err
	}
	if ctx.Err() != nil {
		return errors.Join(err, ctx.Err())
	}
	return errs.New(http.StatusBadRequest, wire.CodeInvalidRequest, "%v", err)
}

// processor is the image processor of the prefill's model: the first
// preprocessor_config.json found in --model-path, --tokenizer-path, then the worker's
// model_path / tokenizer_path labels; the Qwen2.5-VL defaults when none is there.
func (m *mediaPrep) processor(cfg config.Config, p *worker.Live) (*media.Processor, error) {
	dirs := []string{cfg.ModelPath, cfg.TokenizerPath}
	for _, k := range []string{"model_path", "tokenizer_path"} {
		if v, ok := p.Label(k); ok {
			dirs = append(dirs, v)
		}
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if v, ok := m.procs.Load(d); ok {
			if v.(*media.Processor) != nil {
				return v.(*media.Processor), nil
			}
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "preprocessor_config.json"))
		if err != nil {
			m.procs.Store(d, (*media.Processor)(nil))
			continue
		}
		c, err := media.ParsePreprocessorConfig(b)
		if err != nil {
			return nil, errs.New(http.StatusInternalServerError, wire.CodeMultimodalNotSupported, "%s: %v", d, err)
		}
		pr := media.NewProcessor(c)
		m.procs.Store(d, pr)
		return pr, nil
	}
	return media.NewProcessor(media.DefaultQwen25VL()), nil
}

// labelMediaRefSchemes is the label a vLLM gRPC worker's GetServerInfo
// mm_media_ref_schemes=17 becomes (comma-separated URL schemes its servicer fetches); only
// servicers that take GenerateRequest.media_refs report it.
const labelMediaRefSchemes = "mm_media_ref_schemes"

// prepareMedia is the media stage (seed "Multimodal Requests"): it finds the chat's image
// parts; with --mm-processing gateway it fetches and prepares each image (Qwen2-VL
// processor) and expands its <|image_pad|> in the prompt ids to the image's token count;
// with worker it keeps the references for vLLM (SGLang and TokenSpeed PD take prepared
// media only: 400 multimodal_not_supported). Text-only requests pass untouched.
func (pl *Pipeline) prepareMedia(ctx context.Context, j *job, proto protocol, p *worker.Live) error {
	if len(j.messages) == 0 || len(j.prompts) != 1 {
		return nil
	}
	refs, err := media.ChatRefs(j.messages)
	if err != nil {
		return errs.BadRequest("%v", err)
	}
	if len(refs) == 0 {
		return nil
	}
	if pl.cfg.MMProcessing == config.MMProcessingWorker {
		// Only vLLM has a worker-side media path under PD (media_refs on the prefill, the
		// media_identity relayed to decode); an SGLang or TokenSpeed decode without
		// mm_inputs could not match the prefill's worker-expanded prompt.
		if proto != sequentialVLLM {
			return errs.New(http.StatusBadRequest, wire.CodeMultimodalNotSupported,
				"%s PD takes gateway-prepared media only; this gateway runs --mm-processing worker", p.Runtime)
		}
		if p.Labels[labelMediaRefSchemes] == "" {
			// A servicer without GetServerInfo mm_media_ref_schemes predates media_refs: it
			// would drop the references as an unknown field and answer without the images.
			return errs.New(http.StatusBadRequest, wire.CodeMultimodalNotSupported,
				"prefill worker %s reports no mm_media_ref_schemes: its vLLM servicer predates worker-side media references (SMG vLLM servicer 1.11+); use --mm-processing gateway", p.ID)
		}
		j.mm = &mmJob{refs: refs, workerSide: true}
		return nil
	}
	padID, ok := j.model.Tokenizer.TokenID(ImagePadToken)
	if !ok {
		return errs.New(http.StatusBadRequest, wire.CodeMultimodalNotSupported,
			"model '%s' has no %s token: the gateway prepares media for the Qwen2-VL family only", j.name, ImagePadToken)
	}
	proc, err := pl.media.processor(pl.cfg, p)
	if err != nil {
		return err
	}
	hold := &mediaHold{l: pl.media.limits}
	kept := false // on success the attempt releases the hold
	defer func() {
		if !kept {
			hold.releaseAll()
		}
	}()
	raws := make([][]byte, len(refs))
	rawHeld := make([]int64, len(refs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i, r := range refs {
		g.Go(func() error {
			if err := hold.acquire(gctx, i, fetchReserve, "fetch"); err != nil {
				return err
			}
			raw, err := pl.media.fetch.Fetch(gctx, r.URL)
			rawHeld[i] = min(int64(len(raw)), fetchReserve)
			hold.release(fetchReserve-rawHeld[i], false) // keep what was received
			raws[i] = raw
			return err
		})
	}
	if err := mediaWaitErr(ctx, g.Wait()); err != nil {
		return err
	}
	// Every header is read before any image is decoded: what the engine cannot receive, or
	// the pixel limit refuses, is refused without a decode.
	hds := make([]media.Header, len(raws))
	for i, raw := range raws {
		if hds[i], err = proc.Inspect(raw); err != nil {
			return imageError(i, err)
		}
	}
	if err := pl.media.limits.checkHeaders(hds); err != nil {
		return err
	}
	items := make([]media.Item, len(refs))
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(4)
	for i := range raws {
		g.Go(func() error {
			it, err := pl.prepareBounded(gctx, hold, i, proc, hds[i], raws[i])
			items[i] = it
			raws[i] = nil
			hold.release(rawHeld[i], true) // the fetched bytes are no longer needed
			return err
		})
	}
	if err := mediaWaitErr(ctx, g.Wait()); err != nil {
		return err
	}
	ids, places, err := media.ExpandPlaceholders(j.prompts[0].ids, padID, items)
	if err != nil {
		return errs.New(http.StatusBadRequest, wire.CodeMultimodalNotSupported, "model '%s': %v (does its chat template render images?)", j.name, err)
	}
	j.prompts[0].ids = ids
	j.mm = &mmJob{items: items, places: places, refs: refs, padID: padID, hold: hold}
	kept = true
	return nil
}
