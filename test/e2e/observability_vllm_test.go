package e2e_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/smg-go/smg/adapters/telemetry"
	"github.com/smg-go/smg/test/fleet"
	"github.com/smg-go/smg/test/sim"
)

// vLLM's sequential handoff: the leg spans name the connector mode the decode body carried
// (nixl from the prefill's kv_transfer_params, mooncake with the minted transfer id), and the
// decode span carries TTFT.
func TestVLLMLegSpansNameTheHandoff(t *testing.T) {
	t.Parallel()
	for _, connector := range []string{sim.ConnectorNixl, sim.ConnectorMooncake} {
		t.Run(connector, func(t *testing.T) {
			t.Parallel()
			spans := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
			t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
			f := fleet.Start(t, fleet.Spec{Engine: sim.EngineVLLM, Connector: connector, Prefills: 1, Decodes: 1,
				Options: []fx.Option{fx.Decorate(func(trace.TracerProvider) trace.TracerProvider { return tp })}})
			r := f.Gateway.Post(t, "/v1/completions", map[string]any{"model": model, "prompt": "hello there", "max_tokens": 3}, nil)
			require.Equal(t, http.StatusOK, r.Status, "%s", r.Body)

			var decode *tracetest.SpanStub
			require.Eventually(t, func() bool {
				for _, s := range spans.GetSpans() {
					if s.Name == "decode" {
						decode = &s
						return true
					}
				}
				return false
			}, 5*time.Second, 10*time.Millisecond)
			a := spanAttrs(*decode)
			assert.Equal(t, "vllm", a[telemetry.AttrRuntime].AsString())
			assert.Equal(t, connector, a[telemetry.AttrKVMode].AsString(), "mode from the decode body")
			assert.Greater(t, a[telemetry.AttrTTFTMS].AsFloat64(), 0.0)
			if connector == sim.ConnectorMooncake {
				assert.Regexp(t, `^xfer-`, a[telemetry.AttrTransferID].AsString(), "the minted transfer id")
			}
			var prefill bool
			for _, s := range spans.GetSpans() {
				if s.Name == "prefill" && s.Parent.SpanID() == decode.Parent.SpanID() {
					prefill = true
				}
			}
			assert.True(t, prefill, "a prefill span beside the decode span")
		})
	}
}
