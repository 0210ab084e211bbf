package fleet_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/test/fleet"
)

func TestParseMetrics(t *testing.T) {
	t.Parallel()
	text := `# HELP smg_x a counter
# TYPE smg_x counter
smg_x{mode="nixl"} 3
smg_x{mode="passthrough"} 2
smg_h_bucket{backend_type="pd",model="m \"q\"",runtime="sglang",le="+Inf"} 7
plain_total 1.5e+00
`
	m, err := fleet.ParseMetrics([]byte(text))
	require.NoError(t, err)
	assert.Equal(t, 5.0, m.Sum("smg_x"))
	assert.Equal(t, 2.0, m.Sum("smg_x", "mode", "passthrough"))
	assert.Equal(t, 7.0, m.Sum("smg_h_bucket", "model", `m "q"`, "le", "+Inf"))
	assert.Equal(t, []string{"backend_type", "model", "runtime"}, m.LabelNames("smg_h_bucket"))
	assert.Equal(t, 1.5, m.Sum("plain_total"))
	assert.False(t, m.Has("smg_x", "mode", "mooncake"))

	for _, bad := range []string{`x{a="1" 2`, `x{a=1} 2`, `x notanumber`, `lonely`} {
		_, err := fleet.ParseMetrics([]byte(bad))
		assert.Error(t, err, bad)
	}
}
