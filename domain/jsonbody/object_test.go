package jsonbody_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/jsonbody"
)

func TestParseRejectsInvalidJSONWithOffset(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		in     string
		offset int
	}{
		{"empty", ``, 0},
		{"whitespace only", "  \n", 3},
		{"truncated object", `{"a":1`, 6},
		{"missing colon", `{"a" 1}`, 5},
		{"trailing comma", `{"a":1,}`, 7},
		{"bare key", `{a:1}`, 1},
		{"bad literal", `{"a":tru}`, 8},
		{"leading zero", `{"a":01}`, 6},
		{"bad escape", `{"a":"\x"}`, 7},
		{"control char in string", "{\"a\":\"\x01\"}", 6},
		{"trailing garbage", `{"a":1} x`, 8},
		{"two documents", `{}{}`, 2},
		{"dangling exponent", `{"a":1e}`, 7},
		{"single quotes", `{'a':1}`, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := jsonbody.Parse([]byte(tc.in))
			require.Error(t, err)
			assert.ErrorIs(t, err, jsonbody.ErrInvalidJSON)
			var se *jsonbody.SyntaxError
			require.True(t, errors.As(err, &se))
			assert.Equal(t, tc.offset, se.Offset, se.Error())
		})
	}
}

func TestParseRejectsNonObjects(t *testing.T) {
	t.Parallel()
	for in, kind := range map[string]string{
		`[1,2]`: "an array", `"s"`: "a string", ` 12 `: "a number", `true`: "a boolean", `null`: "null",
	} {
		_, err := jsonbody.Parse([]byte(in))
		require.ErrorIs(t, err, jsonbody.ErrNotObject, in)
		assert.NotErrorIs(t, err, jsonbody.ErrInvalidJSON)
		assert.Equal(t, "JSON body is not an object (found "+kind+")", err.Error())
	}
	_, err := jsonbody.Parse([]byte(`[1,`))
	assert.ErrorIs(t, err, jsonbody.ErrInvalidJSON, "invalid beats not-object")
}

func TestParseDepthLimitMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	ok := `{"a":` + strings.Repeat("[", jsonbody.MaxDepth-1) + strings.Repeat("]", jsonbody.MaxDepth-1) + `}`
	_, err := jsonbody.Parse([]byte(ok))
	require.NoError(t, err)
	deep := `{"a":` + strings.Repeat("[", jsonbody.MaxDepth) + strings.Repeat("]", jsonbody.MaxDepth) + `}`
	_, err = jsonbody.Parse([]byte(deep))
	require.ErrorIs(t, err, jsonbody.ErrInvalidJSON)
	assert.Contains(t, err.Error(), "exceeded max depth")
}

func TestGetReturnsRawValueBytes(t *testing.T) {
	t.Parallel()
	src := []byte(" {\"model\" : \"m\", \"n\":2.0 ,\"sp\":{\"n\": [1, 2]},\"a\\u0062\":null,\"n\":3}\n")
	o, err := jsonbody.Parse(src)
	require.NoError(t, err)
	cases := map[string]string{
		"model": `"m"`,
		"n":     `3`, // last duplicate wins, like encoding/json
		"sp":    `{"n": [1, 2]}`,
		"ab":    `null`, // escaped key decoded
	}
	for k, want := range cases {
		raw, ok := o.Get(k)
		require.True(t, ok, k)
		assert.Equal(t, want, string(raw), k)
	}
	_, ok := o.Get("a\\u0062")
	assert.False(t, ok, "keys compare decoded, not raw")
	_, ok = o.Get("missing")
	assert.False(t, ok)
	assert.Equal(t, 5, o.Len())
	assert.Equal(t, []string{"model", "n", "sp", "ab", "n"}, o.Keys())
	assert.True(t, o.Has("sp"))
	assert.Equal(t, src, o.Bytes())

	var got []string
	for k, v := range o.Members() {
		got = append(got, k+"="+string(v))
		if k == "sp" {
			break
		}
	}
	assert.Equal(t, []string{`model="m"`, `n=2.0`, `sp={"n": [1, 2]}`}, got)
}

func TestParseEmptyAndManyMembers(t *testing.T) {
	t.Parallel()
	o, err := jsonbody.Parse([]byte(" { } "))
	require.NoError(t, err)
	assert.Equal(t, 0, o.Len())

	var b strings.Builder
	b.WriteString("{")
	for i := range 40 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":%d`, i, i%10)
	}
	b.WriteString("}")
	o, err = jsonbody.Parse([]byte(b.String()))
	require.NoError(t, err)
	assert.Equal(t, 40, o.Len())
	raw, ok := o.Get("k39")
	require.True(t, ok)
	assert.Equal(t, "9", string(raw))
}
