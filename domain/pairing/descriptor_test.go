package pairing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

func TestParseMode(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]pairing.Mode{
		"off": pairing.ModeOff, "lenient": pairing.ModeLenient, "strict": pairing.ModeStrict, "": pairing.ModeLenient,
	} {
		got, err := pairing.ParseMode(in)
		require.NoError(t, err, in)
		assert.Equal(t, want, got, in)
	}
	for _, bad := range []string{"Strict", "none", "on"} {
		_, err := pairing.ParseMode(bad)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), "expected off, lenient or strict")
	}
	assert.Equal(t, "lenient", pairing.Mode("").String())
}

func TestDescribeAndKey(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		w    worker.Worker
		want pairing.Descriptor
		key  string
	}{
		{
			name: "seed example: vLLM NIXL with full layout",
			w: worker.Worker{Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP, KVConnector: "NixlConnector",
				Labels: map[string]string{"kv_cache_dtype": "auto", "block_size": "16",
					"attention_backend": "flash_attn", "model_dtype": "torch.bfloat16", "version": "0.11.0"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "nixl", Version: "0.11.0",
				Layout: pairing.Layout{KVCacheDtype: "auto", PageSize: "16", AttentionBackend: "flash_attn", ModelDtype: "torch.bfloat16"}},
			key: "vllm/nixl/dtype=auto,page=16,attn=flash_attn,model=torch.bfloat16",
		},
		{
			name: "vLLM HTTP without connector: transport unknown",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, Mode: worker.ConnHTTP},
			want: pairing.Descriptor{Runtime: "vllm"},
			key:  "vllm/?/?",
		},
		{
			name: "vLLM Mooncake, page from block_size, only present layout facts listed",
			w: worker.Worker{Runtime: worker.RuntimeVLLM, Mode: worker.ConnGRPC, KVConnector: "MooncakeConnector",
				Labels: map[string]string{"block_size": "32", "model_dtype": "bf16"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "mooncake", GRPC: true,
				Layout: pairing.Layout{PageSize: "32", ModelDtype: "bf16"}},
			key: "vllm/mooncake/page=32,model=bf16",
		},
		{
			name: "vLLM connector from the kv_connector label, case-insensitive",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, Labels: map[string]string{"kv_connector": "nixlconnector"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "nixl"},
			key:  "vllm/nixl/?",
		},
		{
			name: "vLLM other connector lower-cased",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "LMCacheConnectorV1"},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "lmcacheconnectorv1"},
			key:  "vllm/lmcacheconnectorv1/?",
		},
		{
			name: "MoRI-IO without mode",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector"},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "moriio"},
			key:  "vllm/moriio/?",
		},
		{
			name: "MoRI-IO read",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector", Labels: map[string]string{"moriio_mode": "read"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "moriio-read"},
			key:  "vllm/moriio-read/?",
		},
		{
			name: "MoRI-IO WRITE upper-case label",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "MoRIIOConnector", Labels: map[string]string{"moriio_mode": "WRITE"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "moriio-write"},
			key:  "vllm/moriio-write/?",
		},
		{
			name: "moriio_mode ignored on a non-MoRI-IO connector",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector", Labels: map[string]string{"moriio_mode": "read"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "nixl"},
			key:  "vllm/nixl/?",
		},
		{
			name: "SGLang transfer backend label, page_size",
			w: worker.Worker{Runtime: worker.RuntimeSGLang, Mode: worker.ConnGRPC,
				Labels: map[string]string{"disaggregation_transfer_backend": "Mooncake", "page_size": "64", "kv_cache_dtype": "fp8_e4m3"}},
			want: pairing.Descriptor{Runtime: "sglang", Transport: "mooncake", GRPC: true,
				Layout: pairing.Layout{KVCacheDtype: "fp8_e4m3", PageSize: "64"}},
			key: "sglang/mooncake/dtype=fp8_e4m3,page=64",
		},
		{
			name: "SGLang without backend: unknown transport (no default)",
			w:    worker.Worker{Runtime: worker.RuntimeSGLang, KVConnector: "NixlConnector"},
			want: pairing.Descriptor{Runtime: "sglang"},
			key:  "sglang/?/?",
		},
		{
			name: "TokenSpeed defaults to mooncake",
			w:    worker.Worker{Runtime: worker.RuntimeTokenSpeed},
			want: pairing.Descriptor{Runtime: "tokenspeed", Transport: "mooncake"},
			key:  "tokenspeed/mooncake/?",
		},
		{
			name: "TokenSpeed with backend label",
			w:    worker.Worker{Runtime: worker.RuntimeTokenSpeed, Labels: map[string]string{"disaggregation_transfer_backend": "nixl"}},
			want: pairing.Descriptor{Runtime: "tokenspeed", Transport: "nixl"},
			key:  "tokenspeed/nixl/?",
		},
		{
			name: "unspecified runtime reports nothing",
			w:    worker.Worker{Runtime: worker.RuntimeUnspecified},
			want: pairing.Descriptor{},
			key:  "?/?/?",
		},
		{
			name: "unspecified runtime keeps a registered connector",
			w:    worker.Worker{KVConnector: "NixlConnector"},
			want: pairing.Descriptor{Transport: "nixl"},
			key:  "?/nixl/?",
		},
		{
			name: "explicit protocol is the key",
			w: worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector",
				Labels: map[string]string{"pairing_protocol": "team-a-v2", "kv_cache_dtype": "auto"}},
			want: pairing.Descriptor{Runtime: "vllm", Transport: "nixl", Protocol: "team-a-v2",
				Layout: pairing.Layout{KVCacheDtype: "auto"}},
			key: "team-a-v2",
		},
		{
			name: "empty and blank labels are unknown",
			w:    worker.Worker{Runtime: worker.RuntimeVLLM, Labels: map[string]string{"kv_cache_dtype": " ", "pairing_protocol": "", "version": ""}},
			want: pairing.Descriptor{Runtime: "vllm"},
			key:  "vllm/?/?",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			d := pairing.Describe(tc.w)
			assert.Equal(t, tc.want, d)
			assert.Equal(t, tc.key, pairing.Key(d))
		})
	}
}
