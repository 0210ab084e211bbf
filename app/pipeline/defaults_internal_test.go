package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
	"github.com/smg-go/smg/ports"
)

func decodeWith(labels map[string]string) *worker.Live {
	return worker.NewLive(worker.Worker{ID: "d", URL: "grpc://d:1", Role: worker.RoleDecode, Labels: labels}, worker.StatusReady)
}

func TestApplyDecodeDefaultsFillsOnlyOmittedKnobs(t *testing.T) {
	t.Parallel()
	temp := float32(0.2)
	s := ports.GRPCSampling{Temperature: &temp}
	applyDecodeDefaults(&s, decodeWith(map[string]string{wire.LabelDefaultSamplingParams: `{"temperature":0.9,"top_p":0.8,"top_k":40,"min_p":0.05,"repetition_penalty":1.1,"max_tokens":7}`}))
	require.NotNil(t, s.TopP)
	require.NotNil(t, s.TopK)
	require.NotNil(t, s.MinP)
	require.NotNil(t, s.RepetitionPenalty)
	assert.InDelta(t, 0.2, *s.Temperature, 1e-6, "the client's knob wins")
	assert.InDelta(t, 0.8, *s.TopP, 1e-6)
	assert.EqualValues(t, 40, *s.TopK)
	assert.InDelta(t, 0.05, *s.MinP, 1e-6)
	assert.InDelta(t, 1.1, *s.RepetitionPenalty, 1e-6)
	assert.Nil(t, s.MaxTokens, "only the five sampling knobs are defaulted")
}

func TestApplyDecodeDefaultsIgnoresMissingOrBadLabels(t *testing.T) {
	t.Parallel()
	for _, labels := range []map[string]string{nil, {wire.LabelDefaultSamplingParams: ""},
		{wire.LabelDefaultSamplingParams: `not json`}, {wire.LabelDefaultSamplingParams: `{"temperature":"hot"}`},
		{wire.LabelDefaultSamplingParams: `{"top_k":2.5}`}} {
		var s ports.GRPCSampling
		applyDecodeDefaults(&s, decodeWith(labels))
		assert.Equal(t, ports.GRPCSampling{}, s, "%v", labels)
	}
}
