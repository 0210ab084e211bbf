package pairing_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/pairing"
	"github.com/smg-go/smg/domain/worker"
)

// verdict is the expected outcome under one mode: nil diffs means the pair is allowed.
type verdict []string

func vllm(transport string) pairing.Descriptor {
	return pairing.Descriptor{Runtime: "vllm", Transport: transport}
}

func withLayout(d pairing.Descriptor, l pairing.Layout) pairing.Descriptor {
	d.Layout = l
	return d
}

func withVersion(d pairing.Descriptor, v string) pairing.Descriptor {
	d.Version = v
	return d
}

func withProtocol(d pairing.Descriptor, p string) pairing.Descriptor {
	d.Protocol = p
	return d
}

func grpc(d pairing.Descriptor) pairing.Descriptor {
	d.GRPC = true
	return d
}

func TestCompatibleRules(t *testing.T) {
	t.Parallel()
	full := pairing.Layout{KVCacheDtype: "auto", PageSize: "16", AttentionBackend: "flash_attn", ModelDtype: "bf16"}
	sg := pairing.Descriptor{Runtime: "sglang", Transport: "mooncake"}
	cases := []struct {
		name                 string
		p, d                 pairing.Descriptor
		off, lenient, strict verdict
	}{
		{name: "identical known facts pair everywhere",
			p: withLayout(vllm("nixl"), full), d: withLayout(vllm("nixl"), full)},
		{name: "both legs report nothing: lenient pairs, strict refuses unknown runtime and transport",
			p: pairing.Descriptor{}, d: pairing.Descriptor{},
			strict: verdict{"runtime", "transport"}},
		{name: "transport unknown on both legs: strict refuses transport",
			p: vllm(""), d: vllm(""), strict: verdict{"transport"}},
		{name: "transport unknown on one leg: lenient pairs, strict refuses",
			p: vllm("nixl"), d: vllm(""), strict: verdict{"transport"}},
		{name: "runtime unknown on one leg: lenient pairs, strict refuses",
			p: pairing.Descriptor{Transport: "nixl"}, d: vllm("nixl"), strict: verdict{"runtime"}},
		{name: "NIXL prefill with Mooncake decode refused on transport, paired under off",
			p: vllm("nixl"), d: vllm("mooncake"),
			lenient: verdict{"transport"}, strict: verdict{"transport"}},
		{name: "MoRI-IO read vs write differ in transport",
			p: vllm("moriio-read"), d: vllm("moriio-write"),
			lenient: verdict{"transport"}, strict: verdict{"transport"}},
		{name: "different runtimes over HTTP: refused except under off",
			p: sg, d: pairing.Descriptor{Runtime: "tokenspeed", Transport: "mooncake"},
			lenient: verdict{"runtime"}, strict: verdict{"runtime"}},
		{name: "different runtimes over gRPC: refused even under off",
			p: grpc(sg), d: grpc(pairing.Descriptor{Runtime: "tokenspeed", Transport: "mooncake"}),
			off: verdict{"runtime"}, lenient: verdict{"runtime"}, strict: verdict{"runtime"}},
		{name: "gRPC leg with unknown peer runtime pairs under off",
			p: grpc(sg), d: pairing.Descriptor{}, strict: verdict{"runtime", "transport"}},
		{name: "one leg reports a layout fact: lenient pairs, strict refuses that fact",
			p: withLayout(vllm("nixl"), pairing.Layout{KVCacheDtype: "fp8"}), d: vllm("nixl"),
			strict: verdict{"kv_cache_dtype"}},
		{name: "each layout fact compared on its own",
			p:       withLayout(vllm("nixl"), pairing.Layout{KVCacheDtype: "fp8", PageSize: "16", AttentionBackend: "flashinfer"}),
			d:       withLayout(vllm("nixl"), pairing.Layout{KVCacheDtype: "auto", PageSize: "16", ModelDtype: "bf16"}),
			lenient: verdict{"kv_cache_dtype"},
			strict:  verdict{"kv_cache_dtype", "attention_backend", "model_dtype"}},
		{name: "differing page size and model dtype",
			p:       withLayout(vllm("nixl"), pairing.Layout{PageSize: "16", ModelDtype: "bf16"}),
			d:       withLayout(vllm("nixl"), pairing.Layout{PageSize: "32", ModelDtype: "fp16"}),
			lenient: verdict{"page_size", "model_dtype"}, strict: verdict{"page_size", "model_dtype"}},
		{name: "differing versions: lenient pairs, strict refuses",
			p: withVersion(vllm("nixl"), "0.10.1"), d: withVersion(vllm("nixl"), "0.11.0"),
			strict: verdict{"version"}},
		{name: "version on one leg only is ignored even under strict",
			p: withVersion(vllm("nixl"), "0.10.1"), d: vllm("nixl")},
		{name: "equal versions pair under strict",
			p: withVersion(vllm("nixl"), "0.11.0"), d: withVersion(vllm("nixl"), "0.11.0")},
		{name: "all differences listed in fixed order",
			p: withVersion(withLayout(vllm("nixl"), full), "1"),
			d: withVersion(withLayout(pairing.Descriptor{Runtime: "sglang", Transport: "mooncake"},
				pairing.Layout{KVCacheDtype: "fp8", PageSize: "64", AttentionBackend: "fa3", ModelDtype: "fp16"}), "2"),
			lenient: verdict{"runtime", "transport", "kv_cache_dtype", "page_size", "attention_backend", "model_dtype"},
			strict:  verdict{"runtime", "transport", "kv_cache_dtype", "page_size", "attention_backend", "model_dtype", "version"}},

		// Explicit pairing protocol.
		{name: "both protocols equal: pair despite differing transport, layout and version",
			p: withProtocol(withVersion(withLayout(vllm("nixl"), full), "1"), "shared"),
			d: withProtocol(withVersion(vllm("mooncake"), "2"), "shared")},
		{name: "both protocols equal with unknown transports: strict pairs (HTTP fleet)",
			p: withProtocol(vllm(""), "shared"), d: withProtocol(vllm(""), "shared")},
		{name: "both protocols differ: refused on pairing_protocol, paired under off",
			p: withProtocol(vllm("nixl"), "a"), d: withProtocol(vllm("nixl"), "b"),
			lenient: verdict{"pairing_protocol"}, strict: verdict{"pairing_protocol"}},
		{name: "both protocols equal but runtimes differ: runtime still compared",
			p: withProtocol(sg, "shared"), d: withProtocol(vllm("mooncake"), "shared"),
			lenient: verdict{"runtime"}, strict: verdict{"runtime"}},
		{name: "both protocols equal, runtime unknown on one leg: strict refuses runtime",
			p: withProtocol(pairing.Descriptor{}, "shared"), d: withProtocol(vllm(""), "shared"),
			strict: verdict{"runtime"}},
		{name: "protocol on one leg, facts agree: lenient falls back and pairs, strict refuses",
			p: withProtocol(vllm("nixl"), "shared"), d: vllm("nixl"),
			strict: verdict{"pairing_protocol"}},
		{name: "protocol on decode leg only, facts differ: lenient refuses on the derived facts",
			p: vllm("nixl"), d: withProtocol(vllm("mooncake"), "shared"),
			lenient: verdict{"transport"}, strict: verdict{"pairing_protocol"}},
	}
	modes := []pairing.Mode{pairing.ModeOff, pairing.ModeLenient, pairing.ModeStrict}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for i, want := range []verdict{tc.off, tc.lenient, tc.strict} {
				ok, diffs := pairing.Compatible(tc.p, tc.d, modes[i])
				assert.Equal(t, want == nil, ok, "mode %s", modes[i])
				assert.Equal(t, []string(want), diffs, "mode %s", modes[i])
			}
		})
	}
}

func TestCompatibleZeroModeIsLenient(t *testing.T) {
	t.Parallel()
	ok, diffs := pairing.Compatible(vllm("nixl"), vllm(""), "")
	assert.True(t, ok)
	assert.Nil(t, diffs)
	ok, diffs = pairing.Compatible(vllm("nixl"), vllm("mooncake"), "")
	assert.False(t, ok)
	assert.Equal(t, []string{"transport"}, diffs)
}

// The seed's rule from real registrations: a NIXL prefill and a Mooncake decode, both vLLM.
func TestCompatibleFromWorkers(t *testing.T) {
	t.Parallel()
	p := pairing.Describe(worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "NixlConnector"})
	d := pairing.Describe(worker.Worker{Runtime: worker.RuntimeVLLM, KVConnector: "MooncakeConnector"})
	for _, m := range []pairing.Mode{pairing.ModeLenient, pairing.ModeStrict} {
		ok, diffs := pairing.Compatible(p, d, m)
		assert.False(t, ok, m)
		assert.Equal(t, []string{"transport"}, diffs, m)
	}
	ok, _ := pairing.Compatible(p, d, pairing.ModeOff)
	assert.True(t, ok)
}
