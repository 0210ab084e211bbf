package grpcengine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/types/known/structpb"

	vllmpb "github.com/smg-go/smg/adapters/engine/grpcengine/pb/vllm"
)

// The label conversion rules of grpc.md §1.2.
func TestStructLabelRules(t *testing.T) {
	t.Parallel()
	s, err := structpb.NewStruct(map[string]any{
		"empty": "", "null_str": "null", "nil": nil, "zero": 0, "int": 48.0, "big": 1 << 40, "float": 0.85,
		"neg": -1, "false": false, "true": true, "list": []any{1, "a"}, "empty_list": []any{},
		"obj": map[string]any{"a": 1}, "str": "flashinfer",
	})
	require.NoError(t, err)
	got := map[string]string{}
	pickStruct(got, s, []string{"empty", "null_str", "nil", "zero", "int", "big", "float", "neg", "false",
		"true", "list", "empty_list", "obj", "str", "absent"})
	assert.Equal(t, map[string]string{
		"int": "48", "big": "1099511627776", "float": "0.85", "neg": "-1", "false": "false", "true": "true",
		"list": `[1,"a"]`, "str": "flashinfer",
	}, got)
}

func TestFlattenMessageSkipsZerosButKeepsFalse(t *testing.T) {
	t.Parallel()
	got := map[string]string{}
	flattenMessage(got, (&vllmpb.GetServerInfoResponse{KvConnector: "NixlConnector", BlockSize: 0, UptimeSeconds: 1.5,
		ServerType: " null ", KvCacheDtype: " fp8 "}).ProtoReflect())
	assert.Equal(t, map[string]string{"kv_connector": "NixlConnector", "uptime_seconds": "1.5", "is_paused": "false",
		"kv_cache_dtype": "fp8"}, got)
}
