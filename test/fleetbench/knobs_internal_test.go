package fleetbench

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestSimKnobsRenderEachRolesFlagsAndSkipZeros(t *testing.T) {
	t.Parallel()
	k := DefaultKnobs()
	assert.Equal(t, []string{"--block-size", "16", "--kv-cache-blocks", "2048", "--prefill-tokens-per-s", "20000",
		"--prefill-fixed-ms", "5", "--max-running", "8"}, k.args("prefill"))
	assert.Equal(t, []string{"--block-size", "16", "--kv-cache-blocks", "2048", "--prefill-tokens-per-s", "20000",
		"--prefill-fixed-ms", "5", "--kv-transfer-ms-per-block", "0.05", "--itl-ms", "10", "--itl-per-running-ms", "0.2",
		"--max-running", "64"}, k.args("decode"))
	assert.Empty(t, SimKnobs{}.args("prefill"), "zero knobs leave smg-sim's defaults")
}
