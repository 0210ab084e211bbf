package pdmode_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/pdmode"
	"github.com/smg-go/smg/domain/worker"
)

func TestPrefillOnlyWantedEdges(t *testing.T) {
	t.Parallel()
	c := pdmode.Config{PrefillOnlyMaxTokens: 8}
	assert.True(t, c.PrefillOnlyWanted(8), "N: prefill-only")
	assert.True(t, c.PrefillOnlyWanted(1))
	assert.False(t, c.PrefillOnlyWanted(9), "N+1: not")
	assert.False(t, c.PrefillOnlyWanted(0), "uncapped: never")
	assert.False(t, pdmode.Config{}.PrefillOnlyWanted(1), "off")
	assert.False(t, c.Enabled(), "the prefill-only trigger is not a decode-only one")
}

func TestCanServePrefillOnly(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		w    worker.Worker
		want bool
	}{
		{"vLLM kv_both NIXL prefill", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVRole: "kv_both", KVConnector: "NixlConnector"}, true},
		{"vLLM kv_producer prefill", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVRole: "kv_producer"}, false},
		{"vLLM prefill without kv_role", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM}, false},
		{"MoRI-IO kv_both prefill", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeVLLM, KVRole: "kv_both", KVConnector: "MoRIIOConnector"}, false},
		{"SGLang prefill", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeSGLang, KVRole: "kv_both"}, false},
		{"TokenSpeed prefill", worker.Worker{Role: worker.RolePrefill, Runtime: worker.RuntimeTokenSpeed, KVRole: "kv_both"}, false},
		{"HTTP SGLang regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnHTTP}, true},
		{"gRPC vLLM regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeVLLM, Mode: worker.ConnGRPC}, true},
		{"gRPC SGLang regular", worker.Worker{Role: worker.RoleRegular, Runtime: worker.RuntimeSGLang, Mode: worker.ConnGRPC}, false},
		{"vLLM kv_both decode", worker.Worker{Role: worker.RoleDecode, Runtime: worker.RuntimeVLLM, KVRole: "kv_both"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, pdmode.CanServePrefillOnly(&tc.w))
		})
	}
}
