package jsonbody_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/jsonbody"
)

func TestPatchRendersExactBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		src  string
		edit func(p *jsonbody.Patch)
		want string
	}{
		{
			name: "no edits returns the source",
			src:  `{ "a" : 1 }`,
			edit: func(*jsonbody.Patch) {},
			want: `{ "a" : 1 }`,
		},
		{
			name: "overwrite in place keeps order and formatting of others",
			src:  "{\"model\": \"m\",\n  \"bootstrap_room\": 1,\n  \"x\": [1, 2]}",
			edit: func(p *jsonbody.Patch) { p.SetUint("bootstrap_room", 9223372036854775807) },
			want: "{\"model\": \"m\",\n  \"bootstrap_room\": 9223372036854775807,\n  \"x\": [1, 2]}",
		},
		{
			name: "new keys append at the end in insertion order",
			src:  `{"b":1,"a":2}`,
			edit: func(p *jsonbody.Patch) {
				p.SetString("bootstrap_host", "10.0.0.1").SetNull("bootstrap_port").SetInt("bootstrap_room", 7)
			},
			want: `{"b":1,"a":2,"bootstrap_host":"10.0.0.1","bootstrap_port":null,"bootstrap_room":7}`,
		},
		{
			name: "append into empty object keeps inner whitespace",
			src:  "{ }\n",
			edit: func(p *jsonbody.Patch) { p.SetBool("stream", false).SetBool("x", true) },
			want: "{ \"stream\":false,\"x\":true}\n",
		},
		{
			name: "delete first, middle and last",
			src:  `{"a":1, "b":2, "c":3, "d":4}`,
			edit: func(p *jsonbody.Patch) { p.Delete("a").Delete("c").Delete("d") },
			want: `{"b":2}`,
		},
		{
			name: "delete every member then append",
			src:  `{"a":1,"b":2}`,
			edit: func(p *jsonbody.Patch) { p.Delete("a").Delete("b").SetInt("c", -3) },
			want: `{"c":-3}`,
		},
		{
			name: "delete all",
			src:  `{"a":1}`,
			edit: func(p *jsonbody.Patch) { p.Delete("a").Delete("zz") },
			want: `{}`,
		},
		{
			name: "duplicates are all rewritten or all removed",
			src:  `{"n":2,"m":0,"n":3,"k":1,"k":2}`,
			edit: func(p *jsonbody.Patch) { p.SetInt("n", 1).Delete("k") },
			want: `{"n":1,"m":0,"n":1}`,
		},
		{
			name: "later edit of a key wins, position of first edit kept",
			src:  `{"a":1}`,
			edit: func(p *jsonbody.Patch) { p.SetInt("x", 1).SetInt("y", 2).Delete("x").SetInt("x", 3) },
			want: `{"a":1,"x":3,"y":2}`,
		},
		{
			name: "delete then set of a source key stays in place",
			src:  `{"a":1,"b":2}`,
			edit: func(p *jsonbody.Patch) { p.Delete("a").SetInt("a", 5) },
			want: `{"a":5,"b":2}`,
		},
		{
			name: "raw values and escaped keys",
			src:  `{"k\u0065y":1}`,
			edit: func(p *jsonbody.Patch) {
				p.Set("key", []byte(`{"do_remote_decode":true}`)).SetString("q\"", "a\n\u2028<&>")
			},
			want: `{"k\u0065y":{"do_remote_decode":true},"q\"":"a\n\u2028<&>"}`,
		},
		{
			name: "min int64",
			src:  `{}`,
			edit: func(p *jsonbody.Patch) { p.SetInt("v", -9223372036854775808) },
			want: `{"v":-9223372036854775808}`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			o, err := jsonbody.Parse([]byte(tc.src))
			require.NoError(t, err)
			p := o.Edit()
			tc.edit(p)
			out := p.Bytes()
			assert.Equal(t, tc.want, string(out))
			assert.Equal(t, len(out), p.Len())
			if tc.want != tc.src {
				assert.Equal(t, len(out), cap(out), "output is sized exactly")
			}
			assert.Equal(t, tc.src, string(o.Bytes()), "source untouched")
			assert.True(t, jsonbody.Valid(out))
		})
	}
}

func TestPatchReplaceOnlyWhenPresent(t *testing.T) {
	t.Parallel()
	o, err := jsonbody.Parse([]byte(`{"n":3,"model":"m"}`))
	require.NoError(t, err)
	p := o.Edit()
	assert.True(t, p.ReplaceInt("n", 1))
	assert.False(t, p.ReplaceInt("max_tokens", 1))
	p.Delete("model")
	assert.False(t, p.Replace("model", []byte(`"x"`)), "deleted earlier in the same patch")
	assert.Equal(t, `{"n":1}`, string(p.Bytes()))
}

func TestPatchNestedObjects(t *testing.T) {
	t.Parallel()
	t.Run("edits an existing nested object in place", func(t *testing.T) {
		t.Parallel()
		o, err := jsonbody.Parse([]byte(`{"text":"hi","sampling_params":{"n":4, "temperature":0.5},"stream":true}`))
		require.NoError(t, err)
		p := o.Edit()
		sp, err := p.Nested("sampling_params")
		require.NoError(t, err)
		sp.SetInt("n", 1).SetInt("max_new_tokens", 1)
		again, err := p.Nested("sampling_params")
		require.NoError(t, err)
		assert.Same(t, sp, again)
		p.SetBool("stream", false)
		out := p.Bytes()
		assert.Equal(t, `{"text":"hi","sampling_params":{"n":1, "temperature":0.5,"max_new_tokens":1},"stream":false}`, string(out))
		assert.Equal(t, len(out), cap(out))
	})
	t.Run("absent or null nested object is created", func(t *testing.T) {
		t.Parallel()
		for _, src := range []string{`{"text":"hi"}`, `{"text":"hi","sampling_params":null}`} {
			o, err := jsonbody.Parse([]byte(src))
			require.NoError(t, err)
			p := o.Edit()
			sp, err := p.Nested("sampling_params")
			require.NoError(t, err)
			sp.SetInt("max_new_tokens", 1)
			assert.Equal(t, `{"text":"hi","sampling_params":{"max_new_tokens":1}}`, string(p.Bytes()), src)
		}
	})
	t.Run("non-object nested value is an error", func(t *testing.T) {
		t.Parallel()
		o, err := jsonbody.Parse([]byte(`{"sampling_params":[1]}`))
		require.NoError(t, err)
		_, err = o.Edit().Nested("sampling_params")
		require.ErrorIs(t, err, jsonbody.ErrNotObject)
		p := o.Edit()
		p.SetInt("x", 1)
		_, err = p.Nested("x")
		require.ErrorIs(t, err, jsonbody.ErrNotObject)
		assert.Contains(t, err.Error(), `"x"`)
	})
	t.Run("nested over a raw object set earlier", func(t *testing.T) {
		t.Parallel()
		o, err := jsonbody.Parse([]byte(`{}`))
		require.NoError(t, err)
		p := o.Edit()
		p.Set("meta", []byte(`{"a":1}`))
		m, err := p.Nested("meta")
		require.NoError(t, err)
		m.SetInt("b", 2)
		assert.Equal(t, `{"meta":{"a":1,"b":2}}`, string(p.Bytes()))
	})
}

func TestPatchAppendTo(t *testing.T) {
	t.Parallel()
	o, err := jsonbody.Parse([]byte(`{"a":1}`))
	require.NoError(t, err)
	out := o.Edit().SetInt("b", 2).AppendTo([]byte("data: "))
	assert.Equal(t, `data: {"a":1,"b":2}`, string(out))
}
