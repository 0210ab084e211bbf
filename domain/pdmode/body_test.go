package pdmode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/pdmode"
)

func TestLocalBodyDropsTheHandoffMembers(t *testing.T) {
	t.Parallel()
	o, err := jsonbody.Parse([]byte(`{"model":"m","bootstrap_room":7,"prompt":"hi","kv_transfer_params":{"do_remote_prefill":true},"bootstrap_host":"h","bootstrap_port":1,"max_tokens":3}`))
	require.NoError(t, err)
	assert.JSONEq(t, `{"model":"m","prompt":"hi","max_tokens":3}`, string(pdmode.LocalBody(o)))

	plain := []byte(`{"model":"m", "prompt":"hi"}`)
	o, err = jsonbody.Parse(plain)
	require.NoError(t, err)
	assert.Equal(t, string(plain), string(pdmode.LocalBody(o)), "unchanged, byte for byte")
}
