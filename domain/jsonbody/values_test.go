package jsonbody_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/jsonbody"
)

func TestKindOf(t *testing.T) {
	t.Parallel()
	cases := map[string]jsonbody.Kind{
		`{}`: jsonbody.KindObject, ` [1]`: jsonbody.KindArray, `"s"`: jsonbody.KindString,
		`-1`: jsonbody.KindNumber, `0.5`: jsonbody.KindNumber, `true`: jsonbody.KindBool,
		`false`: jsonbody.KindBool, `null`: jsonbody.KindNull, ``: jsonbody.KindInvalid, `x`: jsonbody.KindInvalid,
	}
	for in, want := range cases {
		assert.Equal(t, want, jsonbody.KindOf([]byte(in)), in)
	}
	assert.Equal(t, "array", jsonbody.KindArray.String())
	assert.Equal(t, "invalid", jsonbody.KindInvalid.String())
}

func TestTypedReaders(t *testing.T) {
	t.Parallel()
	b, ok := jsonbody.Bool([]byte("true"))
	assert.True(t, b && ok)
	b, ok = jsonbody.Bool([]byte("false"))
	assert.True(t, !b && ok)
	_, ok = jsonbody.Bool([]byte(`"true"`))
	assert.False(t, ok)

	ints := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"3", 3, true}, {"-7", -7, true}, {"2.0", 2, true}, {"1e3", 1000, true},
		{"2.5", 0, false}, {`"3"`, 0, false}, {"null", 0, false},
		{"9223372036854775807", 9223372036854775807, true}, {"1e19", 0, false},
	}
	for _, tc := range ints {
		v, ok := jsonbody.Int([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, v, tc.in)
	}

	strs := []struct {
		in, want string
		ok       bool
	}{
		{`"plain"`, "plain", true},
		{`"a\"b\\c\/d\n\u00e9"`, "a\"b\\c/d\né", true},
		{`"\ud83d\ude00"`, "😀", true},
		{`"\ud83d x"`, "\ufffd x", true},
		{"\"\xff\"", "\ufffd", true},
		{`3`, "", false},
	}
	for _, tc := range strs {
		v, ok := jsonbody.String([]byte(tc.in))
		assert.Equal(t, tc.ok, ok, tc.in)
		assert.Equal(t, tc.want, v, tc.in)
	}
	assert.True(t, jsonbody.IsNull([]byte("null")))
	assert.False(t, jsonbody.IsNull([]byte(`"null"`)))
}

func TestArrays(t *testing.T) {
	t.Parallel()
	lens := map[string]int{`[]`: 0, `[ ]`: 0, `[1]`: 1, `["a", [1,2], {"x":[3]}]`: 3, `[[1],[2,3]]`: 2}
	for in, want := range lens {
		n, ok := jsonbody.ArrayLen([]byte(in))
		assert.True(t, ok, in)
		assert.Equal(t, want, n, in)
	}
	_, ok := jsonbody.ArrayLen([]byte(`{"a":[]}`))
	assert.False(t, ok)

	assert.True(t, jsonbody.IsArrayOfArrays([]byte(`[[1,2],[3]]`)))
	assert.True(t, jsonbody.IsArrayOfArrays([]byte(`[ [] ]`)))
	assert.False(t, jsonbody.IsArrayOfArrays([]byte(`[]`)))
	assert.False(t, jsonbody.IsArrayOfArrays([]byte(`[1,2]`)))
	assert.False(t, jsonbody.IsArrayOfArrays([]byte(`[[1],2]`)))
	assert.False(t, jsonbody.IsArrayOfArrays([]byte(`"x"`)))

	var got []string
	for i, e := range jsonbody.Elements([]byte(` [ "a,b" , {"k":"]"}, 3 ] `)) {
		got = append(got, string(rune('0'+i))+":"+string(e))
	}
	assert.Equal(t, []string{`0:"a,b"`, `1:{"k":"]"}`, `2:3`}, got)
}

func TestAppendString(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"":            `""`,
		"plain":       `"plain"`,
		"q\"b\\":      `"q\"b\\"`,
		"\n\r\t\x01":  `"\n\r\t\u0001"`,
		"<&>":         `"<&>"`,
		"é\u2028\xff": `"é\u2028\ufffd"`,
	}
	for in, want := range cases {
		assert.Equal(t, want, string(jsonbody.AppendString(nil, in)), in)
	}
}
