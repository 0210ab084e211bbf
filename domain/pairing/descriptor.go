package pairing

import (
	"strings"

	"github.com/smg-go/smg/domain/wire"
	"github.com/smg-go/smg/domain/worker"
)

// Descriptor is what pairing compares about one prefill or decode worker (seed "What Is
// Compared"). Every string field is normalised by Describe; "" means the worker does not
// report that fact (unknown). Descriptor is comparable, so equal descriptors pair identically
// and can be grouped with a map.
type Descriptor struct {
	// Runtime is the detected engine: "sglang", "vllm", "tokenspeed" (or another runtime name
	// such as "trtllm"); "" while the runtime is unspecified.
	Runtime string
	// Transport is the KV transfer protocol: "nixl", "mooncake", "moriio", "moriio-read",
	// "moriio-write", or another connector/backend name lower-cased; "" when unknown.
	Transport string
	// Layout is the KV layout, each fact compared on its own.
	Layout Layout
	// Version is the engine version from the `version` label; compared only in strict mode,
	// and only when both legs report one. Not part of the key.
	Version string
	// Protocol is the explicit pairing protocol from the `pairing_protocol` label; when set it
	// takes precedence over every derived fact except the runtime.
	Protocol string
	// GRPC reports that the worker is reached over gRPC: even ModeOff keeps a gRPC leg on the
	// runtime of its peer (seed "Pairing Modes").
	GRPC bool
}

// Layout is the KV cache layout of a worker: the `kv_cache_dtype`, `page_size` (vLLM's
// `block_size`), `attention_backend` and `model_dtype` labels, verbatim after trimming
// spaces; "" when the label is absent or empty.
type Layout struct {
	KVCacheDtype     string
	PageSize         string
	AttentionBackend string
	ModelDtype       string
}

// Describe derives the pairing descriptor of w (seed "What Is Compared"):
//
//   - Runtime: w.Runtime; RuntimeUnspecified (or "") is unknown.
//   - Transport, vLLM: the KV connector (w.KVConnector, else the `kv_connector` label) reduced
//     case-insensitively to "nixl" (NixlConnector), "mooncake" (MooncakeConnector) or
//     "moriio" (MoRIIOConnector); the short names themselves are accepted too; any other name
//     is kept lower-cased (e.g. "multiconnector"). A moriio worker with a `moriio_mode` label
//     becomes "moriio-read" or "moriio-write" ("moriio-<value>" for any other value, so two
//     legs with different odd values still differ). No connector (an HTTP worker registered by
//     URL alone): unknown.
//   - Transport, SGLang: the `disaggregation_transfer_backend` label, lower-cased; unknown
//     when absent. TokenSpeed: the same label, "mooncake" when absent.
//   - Transport, other or unspecified runtime: the connector when one is registered, else the
//     backend label, else unknown (a worker whose runtime is not detected yet may still carry
//     the facts it was registered with).
//   - Layout: see Layout. The page size of a vLLM worker is its `block_size` label (falling
//     back to `page_size`); for every other runtime `page_size` (falling back to `block_size`).
//   - Version: the `version` label. Protocol: the `pairing_protocol` label. Registration copies
//     a gRPC servicer's SMG_PAIRING_PROTOCOL into that label when the label is absent; the
//     label wins (seed "Explicit Pairing Protocol").
//   - GRPC: w.Mode is ConnGRPC.
func Describe(w worker.Worker) Descriptor {
	d := Descriptor{
		Runtime:  runtimeOf(w.Runtime),
		Version:  label(w, wire.LabelVersion),
		Protocol: label(w, wire.LabelPairingProtocol),
		GRPC:     w.Mode == worker.ConnGRPC,
	}
	connector := strings.TrimSpace(w.KVConnector)
	if connector == "" {
		connector = label(w, wire.LabelKVConnector)
	}
	backend := strings.ToLower(label(w, wire.LabelTransferBackend))
	switch w.Runtime {
	case worker.RuntimeVLLM:
		d.Transport = reduceConnector(connector, label(w, wire.LabelMoRIIOMode))
	case worker.RuntimeSGLang:
		d.Transport = backend
	case worker.RuntimeTokenSpeed:
		d.Transport = backend
		if d.Transport == "" {
			d.Transport = wire.ModeMooncake
		}
	default:
		d.Transport = reduceConnector(connector, label(w, wire.LabelMoRIIOMode))
		if d.Transport == "" {
			d.Transport = backend
		}
	}
	page, fallback := wire.LabelPageSize, wire.LabelBlockSize
	if w.Runtime == worker.RuntimeVLLM {
		page, fallback = fallback, page
	}
	d.Layout = Layout{
		KVCacheDtype:     label(w, wire.LabelKVCacheDtype),
		PageSize:         firstLabel(w, page, fallback),
		AttentionBackend: label(w, wire.LabelAttentionBackend),
		ModelDtype:       label(w, wire.LabelModelDtype),
	}
	return d
}

// Unknown is the key part printed for an unknown runtime, transport or layout.
const Unknown = "?"

// Key is the worker's pairing key as GET /workers shows it in `pd_pairing` (seed "What Is
// Compared"): the explicit protocol when set, otherwise "runtime/transport/layout" with "?"
// for an unknown runtime or transport. The layout lists only the facts the worker reports, in
// the order dtype, page, attn, model, as "name=value" joined by ","; "?" when it reports none.
// The version is not part of the key. Example: a vLLM worker with NixlConnector and labels
// kv_cache_dtype=auto, block_size=16, attention_backend=flash_attn, model_dtype=torch.bfloat16
// gives "vllm/nixl/dtype=auto,page=16,attn=flash_attn,model=torch.bfloat16".
func Key(d Descriptor) string {
	if d.Protocol != "" {
		return d.Protocol
	}
	var b strings.Builder
	b.WriteString(orUnknown(d.Runtime))
	b.WriteByte('/')
	b.WriteString(orUnknown(d.Transport))
	b.WriteByte('/')
	b.WriteString(layoutKey(d.Layout))
	return b.String()
}

func layoutKey(l Layout) string {
	parts := make([]string, 0, 4)
	for _, f := range []struct{ name, v string }{
		{"dtype", l.KVCacheDtype}, {"page", l.PageSize},
		{"attn", l.AttentionBackend}, {"model", l.ModelDtype},
	} {
		if f.v != "" {
			parts = append(parts, f.name+"="+f.v)
		}
	}
	if len(parts) == 0 {
		return Unknown
	}
	return strings.Join(parts, ",")
}

func orUnknown(s string) string {
	if s == "" {
		return Unknown
	}
	return s
}

func runtimeOf(r worker.Runtime) string {
	if r == worker.RuntimeUnspecified || r == "" {
		return ""
	}
	return strings.ToLower(string(r))
}

// reduceConnector maps a vLLM KV connector name to its pairing transport (see Describe).
func reduceConnector(connector, moriioMode string) string {
	c := strings.ToLower(strings.TrimSpace(connector))
	switch c {
	case "":
		return ""
	case strings.ToLower(wire.ConnectorNixl), wire.ModeNixl:
		return wire.ModeNixl
	case strings.ToLower(wire.ConnectorMooncake), wire.ModeMooncake:
		return wire.ModeMooncake
	case strings.ToLower(wire.ConnectorMoRIIO), wire.ModeMoRIIO:
		switch m := strings.ToLower(moriioMode); m {
		case "":
			return wire.ModeMoRIIO
		case wire.MoRIIOModeRead:
			return wire.TransportMoRIIORead
		case wire.MoRIIOModeWrite:
			return wire.TransportMoRIIOWrite
		default:
			return wire.ModeMoRIIO + "-" + m
		}
	}
	return c
}

func label(w worker.Worker, key string) string {
	return strings.TrimSpace(w.Labels[key])
}

func firstLabel(w worker.Worker, keys ...string) string {
	for _, k := range keys {
		if v := label(w, k); v != "" {
			return v
		}
	}
	return ""
}
