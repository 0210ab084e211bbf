package pipeline

import (
	"encoding/json"
	"math"
	"sync"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

// samplingDefaults are the knobs a decode worker's default_sampling_params_json may supply
// (smg-spec.md §9.2 step 6: temperature, top_p, top_k, min_p, repetition_penalty); nil =
// not given.
type samplingDefaults struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *float64 `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
}

// parsedDefaults caches the decoded label per distinct JSON text (a handful per fleet).
var parsedDefaults sync.Map // string → samplingDefaults

// decodeDefaults reads w's default_sampling_params_json label; a missing, empty or
// undecodable label (including non-numeric values) gives no defaults.
func decodeDefaults(w *worker.Live) samplingDefaults {
	raw, ok := w.Label(wire.LabelDefaultSamplingParams)
	if !ok || raw == "" {
		return samplingDefaults{}
	}
	if v, ok := parsedDefaults.Load(raw); ok {
		return v.(samplingDefaults)
	}
	var d samplingDefaults
	if json.Unmarshal([]byte(raw), &d) != nil {
		d = samplingDefaults{}
	}
	parsedDefaults.Store(raw, d)
	return d
}

// applyDecodeDefaults fills the knobs the client omitted from the decode worker's sampling
// defaults. The job is prepared afresh on every attempt, so a retry on another decode
// starts from the client's knobs again and takes the new decode's defaults (grpc.md §1.7
// restamp_plan_for_attempt).
func applyDecodeDefaults(s *ports.GRPCSampling, dc *worker.Live) {
	d := decodeDefaults(dc)
	f32 := func(dst **float32, v *float64) {
		if *dst == nil && v != nil && !math.IsNaN(*v) && !math.IsInf(*v, 0) {
			x := float32(*v)
			*dst = &x
		}
	}
	f32(&s.Temperature, d.Temperature)
	f32(&s.TopP, d.TopP)
	f32(&s.MinP, d.MinP)
	f32(&s.RepetitionPenalty, d.RepetitionPenalty)
	if s.TopK == nil && d.TopK != nil && *d.TopK == math.Trunc(*d.TopK) && math.Abs(*d.TopK) <= math.MaxInt32 {
		k := int32(*d.TopK)
		s.TopK = &k
	}
}
