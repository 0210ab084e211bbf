package pipeline

import (
	"fmt"
	"net/http"

	"github.com/smg-go/smg/app/dispatch"
	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// full is the prefill leg's multimodal input: every item with its pixels, grid, hash and
// placeholder, or the references for worker-side processing.
func (m *mmJob) full() *ports.GRPCMultimodal {
	out := &ports.GRPCMultimodal{PlaceholderTokenID: m.padID, WorkerSide: m.workerSide}
	if m.workerSide {
		for _, r := range m.refs {
			out.Items = append(out.Items, ports.GRPCMediaItem{Modality: r.Modality, URL: r.URL})
		}
		return out
	}
	for i := range m.items {
		it := &m.items[i]
		g := it.GridTHW
		out.Items = append(out.Items, ports.GRPCMediaItem{Modality: it.Modality, Hash: it.Hash, Pixels: it.PixelBytes(),
			PixelShape: [2]uint32{uint32(it.Shape[0]), uint32(it.Shape[1])}, Grid: &g,
			Offset: m.places[i].Offset, Length: m.places[i].Length, URL: m.refs[i].URL})
	}
	return out
}

// pixelFree is clone_without_mm_pixels (grpc.md §1.11): the items without their pixel
// payload; hashes, grids (M-RoPE), placeholders, the placeholder token and references kept.
func pixelFree(mm *ports.GRPCMultimodal) *ports.GRPCMultimodal {
	out := *mm
	out.Items = make([]ports.GRPCMediaItem, len(mm.Items))
	for i, it := range mm.Items {
		it.Pixels, it.PixelShape = nil, [2]uint32{}
		out.Items[i] = it
	}
	return &out
}

// hashesOnly is vLLM's clone_without_mm for a --language-model-only decode: per-item
// hashes and modality only.
func hashesOnly(mm *ports.GRPCMultimodal) *ports.GRPCMultimodal {
	out := &ports.GRPCMultimodal{HashesOnly: true}
	for _, it := range mm.Items {
		out.Items = append(out.Items, ports.GRPCMediaItem{Modality: it.Modality, Hash: it.Hash})
	}
	return out
}

// carriesPixels reports a multimodal input with a pixel payload.
func carriesPixels(mm *ports.GRPCMultimodal) bool {
	for _, it := range mm.Items {
		if it.Pixels != nil {
			return true
		}
	}
	return false
}

// stripped reports a decode input that cannot recompute the prompt itself: prepared media
// without pixels (a worker-side leg keeps its references and can).
func stripped(mm *ports.GRPCMultimodal) bool {
	return mm != nil && !mm.WorkerSide && !carriesPixels(mm)
}

// languageModelOnly reports a vLLM decode worker started with --language-model-only: its
// GetModelInfo says supports_vision=false, or an operator label language_model_only=true.
func languageModelOnly(dc *worker.Live) bool {
	if v, ok := dc.Label("supports_vision"); ok && v == "false" {
		return true
	}
	v, ok := dc.Label("language_model_only")
	return ok && v == "true"
}

func lmoError(code, format string, args ...any) error {
	return &errs.Error{Status: http.StatusBadRequest, Code: code, Leg: "decode", Message: fmt.Sprintf(format, args...)}
}

// attachMedia gives each unit's legs their multimodal input (grpc.md §1.11): the prefill
// the full input; the decode a pixel-free clone — SGLang none at all, TokenSpeed the
// per-item metadata, vLLM by sequential_pd_decode_form: n<=1 IdentityOnly (hashes,
// placeholders, im_token_id, grid tensors), n>1 Full (no handoff: decode encodes itself),
// a --language-model-only pool TextPlusHashes — or, when such a pool cannot serve the
// request, a non-retryable 400 before any leg is contacted.
func attachMedia(j *job, proto protocol, units []unit, dc *worker.Live) error {
	if j.mm == nil {
		return nil
	}
	full := j.mm.full()
	lmo := proto == sequentialVLLM && languageModelOnly(dc)
	if lmo {
		switch {
		case j.mm.workerSide:
			return lmoError(wire.CodeLMOnlyMediaRefs, "decode worker %s runs --language-model-only and cannot take worker-side media references; use --mm-processing gateway", dc.ID)
		case j.n > 1:
			return lmoError(wire.CodeLMOnlyNSamples, "decode worker %s runs --language-model-only: multimodal n>1 has no KV handoff and needs a vision-capable decode", dc.ID)
		}
		for _, it := range full.Items {
			if it.Grid != nil {
				return lmoError(wire.CodeLMOnlyMRoPE, "decode worker %s runs --language-model-only and model '%s' uses M-RoPE grid tensors it cannot get", dc.ID, j.name)
			}
		}
	}
	for i := range units {
		u := &units[i]
		u.pLeg.MM = full
		switch {
		case proto == parallelSGLang:
			u.dLeg.MM = nil
		case proto == parallelTokenSpeed:
			u.dLeg.MM = pixelFree(full)
		case lmo:
			u.dLeg.MM = hashesOnly(full)
		case u.width > 1:
			u.dLeg.MM = full
		default:
			u.dLeg.MM = pixelFree(full)
		}
	}
	return nil
}

// relayIdentity replaces a vLLM decode leg's media references with the prefill's
// media_identity (expanded ids, pixel-free items) when the leg holds a KV handoff, n<=1
// and it has references (grpc.md §1.11); otherwise the references stay, with a warning
// when an identity was expected but missing or empty.
func (pl *Pipeline) relayIdentity(dec *ports.GRPCLeg, u *unit, relay bool) {
	if dec.MM == nil || !dec.MM.WorkerSide || !relay || (dec.KVTransferJSON == "" && dec.KVPort == 0) {
		return
	}
	id := u.identity
	if id == nil || len(id.PromptIDs) == 0 || id.MM == nil {
		pl.log.Warn("vLLM prefill returned no usable media_identity; the decode keeps its media references",
			"prefill", u.pLeg.Worker.DisplayURL(), "engine_request_id", dec.RequestID)
		return
	}
	dec.InputIDs = id.PromptIDs
	mm := pixelFree(id.MM)
	mm.WorkerSide = false
	dec.MM = mm
}

// missingKV is the 502 pd_decode_missing_kv_transfer_params of a pixel-free decode leg
// without the prefill's KV params (grpc.md §1.11; non-retryable, blamed on the prefill
// that returned none).
func missingKV(pre ports.GRPCLeg) *fault {
	e := &errs.Error{Status: http.StatusBadGateway, Code: wire.CodeDecodeMissingKVParams, Leg: "prefill",
		Message: "prefill worker " + pre.Worker.ID + " returned no kv_transfer_params for a multimodal request; its pixel-free decode leg cannot recompute the prompt"}
	return &fault{err: dispatch.LegFault(e, pre.Worker, http.StatusBadGateway, nil), w: pre.Worker, status: http.StatusBadGateway}
}
