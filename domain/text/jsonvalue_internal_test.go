package text

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJSONToValueKeepsEncodingJSONSemantics(t *testing.T) {
	t.Parallel()
	v, err := jsonToValue([]byte(` {"b": 1, "a": [1.5, -0, 1e3, 99999999999999999999, true, null, "x"], "b": "last", "s": "` + "\xff" + `"} `))
	require.NoError(t, err)
	require.True(t, v.IsDict())
	d := v.AsDict()
	assert.Equal(t, []string{"b", "a", "s"}, d.OrderedKeys(), "the client's key order; a duplicate keeps its place")
	b, _ := d.Get("b")
	assert.Equal(t, "last", b.AsString(), "the last duplicate wins")
	s, _ := d.Get("s")
	assert.Equal(t, "\ufffd", s.AsString(), "invalid UTF-8 is replaced, not refused")
	a, _ := d.Get("a")
	items := a.AsList().Items
	require.Len(t, items, 7)
	assert.InDelta(t, 1.5, items[0].AsFloat(), 0)
	assert.True(t, items[1].IsInt())
	assert.True(t, items[2].IsFloat(), "1e3 is not an integer literal")
	assert.True(t, items[3].IsFloat(), "beyond int64")
	assert.True(t, items[4].AsBool())
	assert.True(t, items[5].IsNone())
	assert.Equal(t, "x", items[6].AsString())

	for _, bad := range []string{`[1,]`, `{"a":1} x`, `{"a"`, ``} {
		_, err := jsonToValue([]byte(bad))
		assert.Error(t, err, bad)
	}
}
