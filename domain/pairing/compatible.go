package pairing

import "github.com/smg-go/smg/domain/wire"

// Component names reported in Compatible's diffs and in the no_compatible_pd_pair message.
// The layout components, the version and the protocol carry their label names.
const (
	ComponentProtocol         = wire.LabelPairingProtocol // "pairing_protocol"
	ComponentRuntime          = "runtime"
	ComponentTransport        = "transport"
	ComponentKVCacheDtype     = wire.LabelKVCacheDtype     // "kv_cache_dtype"
	ComponentPageSize         = wire.LabelPageSize         // "page_size" (also vLLM block_size)
	ComponentAttentionBackend = wire.LabelAttentionBackend // "attention_backend"
	ComponentModelDtype       = wire.LabelModelDtype       // "model_dtype"
	ComponentVersion          = wire.LabelVersion          // "version"
)

// Compatible reports whether prefill p may hand its KV cache to decode d under mode m, and
// otherwise which components stand in the way, in the fixed order pairing_protocol, runtime,
// transport, kv_cache_dtype, page_size, attention_backend, model_dtype, version. diffs is nil
// when ok. The rules are the seed's ("Pairing Modes", "Explicit Pairing Protocol"):
//
//   - ModeOff: always ok, except that when either leg connects over gRPC and both report a
//     runtime, the runtimes must be equal (the gRPC router keeps both legs on one runtime).
//   - Both legs carry an explicit protocol (lenient and strict): ok iff the protocols are equal
//     and the runtimes agree; nothing else (transport, layout, version) is compared. The
//     runtime is compared under the mode's rule, so strict also refuses an unknown runtime.
//   - Only one leg carries an explicit protocol: lenient ignores it and compares the derived
//     facts; strict refuses ("pairing_protocol").
//   - ModeLenient (also the zero Mode and any unrecognised value): refuses only when both legs
//     report the runtime, the transport or a layout fact and the values differ. Unknown facts
//     and versions are ignored.
//   - ModeStrict: as lenient, and also refuses when the runtime or the transport is unknown on
//     either leg, a layout fact is reported by only one leg, or both legs report a version and
//     the versions differ.
//
// Compatible is symmetric in what it compares but takes the legs in (prefill, decode) order.
func Compatible(p, d Descriptor, m Mode) (ok bool, diffs []string) {
	if m == ModeOff {
		if (p.GRPC || d.GRPC) && p.Runtime != "" && d.Runtime != "" && p.Runtime != d.Runtime {
			return false, []string{ComponentRuntime}
		}
		return true, nil
	}
	strict := m == ModeStrict
	switch {
	case p.Protocol != "" && d.Protocol != "":
		if p.Protocol != d.Protocol {
			diffs = append(diffs, ComponentProtocol)
		}
		diffs = compare(diffs, ComponentRuntime, p.Runtime, d.Runtime, strict)
		return len(diffs) == 0, diffs
	case p.Protocol != "" || d.Protocol != "":
		if strict {
			return false, []string{ComponentProtocol}
		}
	}
	diffs = compare(diffs, ComponentRuntime, p.Runtime, d.Runtime, strict)
	diffs = compare(diffs, ComponentTransport, p.Transport, d.Transport, strict)
	// A layout fact is refused under strict when only one leg reports it; both unknown is fine.
	diffs = compareFact(diffs, ComponentKVCacheDtype, p.Layout.KVCacheDtype, d.Layout.KVCacheDtype, strict)
	diffs = compareFact(diffs, ComponentPageSize, p.Layout.PageSize, d.Layout.PageSize, strict)
	diffs = compareFact(diffs, ComponentAttentionBackend, p.Layout.AttentionBackend, d.Layout.AttentionBackend, strict)
	diffs = compareFact(diffs, ComponentModelDtype, p.Layout.ModelDtype, d.Layout.ModelDtype, strict)
	if strict && p.Version != "" && d.Version != "" && p.Version != d.Version {
		diffs = append(diffs, ComponentVersion)
	}
	return len(diffs) == 0, diffs
}

// compare handles runtime and transport: differing known values refuse; under strict an
// unknown value on either leg refuses too.
func compare(diffs []string, name, p, d string, strict bool) []string {
	switch {
	case p != "" && d != "":
		if p != d {
			return append(diffs, name)
		}
	case strict:
		return append(diffs, name)
	}
	return diffs
}

// compareFact handles one layout fact: differing known values refuse; under strict a fact
// reported by exactly one leg refuses too.
func compareFact(diffs []string, name, p, d string, strict bool) []string {
	switch {
	case p != "" && d != "":
		if p != d {
			return append(diffs, name)
		}
	case strict && (p != "" || d != ""):
		return append(diffs, name)
	}
	return diffs
}
