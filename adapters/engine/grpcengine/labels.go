package grpcengine

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/structpb"
)

// The server_args keys registration copies into labels, per runtime (grpc.md §1.2; SMG
// model_gateway/src/routers/grpc/client.rs). vLLM has no server_args: its whole
// GetServerInfoResponse is flattened instead (flattenMessage).
var (
	sglangServerArgs = []string{
		"model_path", "served_model_name", "tokenizer_path",
		"tp_size", "dp_size", "pp_size",
		"context_length", "max_total_tokens", "max_running_requests",
		"load_balance_method", "disaggregation_mode", "is_embedding", "vocab_size", "weight_version",
		"disaggregation_transfer_backend", "disaggregation_bootstrap_port", "kv_cache_dtype",
		"page_size", "attention_backend", "pairing_protocol",
	}
	tokenspeedServerArgs = []string{
		"model", "served_model_name", "tokenizer",
		"tp_size", "attn_tp_size", "dp_size", "data_parallel_size", "pp_size", "pipeline_parallel_size",
		"context_length", "max_total_tokens", "max_num_seqs", "max_running_requests",
		"load_balance_method", "is_embedding", "vocab_size", "weight_version",
		"disaggregation_mode", "disaggregation_transfer_backend", "disaggregation_bootstrap_port",
		"kv_cache_dtype", "attention_backend", "pairing_protocol",
	}
)

// pickStruct copies keys of s into labels with structLabel's rules; absent keys and
// values that convert to nothing are skipped.
func pickStruct(labels map[string]string, s *structpb.Struct, keys []string) {
	if s == nil {
		return
	}
	for _, k := range keys {
		if v, ok := s.GetFields()[k]; ok {
			if str, ok := structLabel(v); ok {
				labels[k] = str
			}
		}
	}
}

// structLabel renders one server_args value as a label (grpc.md §1.2): strings as they
// are, skipping "" and "null"; numbers skipping 0, integral ones without a decimal point;
// booleans "true"/"false", kept when false; non-empty lists as JSON. Nulls and objects give
// nothing.
func structLabel(v *structpb.Value) (string, bool) {
	switch x := v.GetKind().(type) {
	case *structpb.Value_StringValue:
		return stringLabel(x.StringValue)
	case *structpb.Value_NumberValue:
		return numberLabel(x.NumberValue)
	case *structpb.Value_BoolValue:
		return strconv.FormatBool(x.BoolValue), true
	case *structpb.Value_ListValue:
		if len(x.ListValue.GetValues()) == 0 {
			return "", false
		}
		b, err := json.Marshal(x.ListValue.AsSlice())
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return "", false
}

func stringLabel(s string) (string, bool) {
	if s == "" || s == "null" {
		return "", false
	}
	return s, true
}

func numberLabel(f float64) (string, bool) {
	if f == 0 || math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	if f == math.Trunc(f) && math.Abs(f) < 1<<53 {
		return strconv.FormatInt(int64(f), 10), true
	}
	return strconv.FormatFloat(f, 'f', -1, 64), true
}

// flattenMessage copies every scalar field of m into labels named after the proto fields,
// with structLabel's rules (vLLM GetServerInfoResponse, grpc.md §1.2). Repeated, map and
// message fields are skipped.
func flattenMessage(labels map[string]string, m protoreflect.Message) {
	fields := m.Descriptor().Fields()
	for i := 0; i < fields.Len(); i++ {
		fd := fields.Get(i)
		if fd.IsList() || fd.IsMap() {
			continue
		}
		v := m.Get(fd)
		var (
			s  string
			ok bool
		)
		switch fd.Kind() {
		case protoreflect.StringKind:
			s, ok = stringLabel(strings.TrimSpace(v.String()))
		case protoreflect.BoolKind:
			s, ok = strconv.FormatBool(v.Bool()), true
		case protoreflect.Int32Kind, protoreflect.Int64Kind, protoreflect.Sint32Kind,
			protoreflect.Sint64Kind, protoreflect.Sfixed32Kind, protoreflect.Sfixed64Kind:
			if n := v.Int(); n != 0 {
				s, ok = strconv.FormatInt(n, 10), true
			}
		case protoreflect.Uint32Kind, protoreflect.Uint64Kind, protoreflect.Fixed32Kind, protoreflect.Fixed64Kind:
			if n := v.Uint(); n != 0 {
				s, ok = strconv.FormatUint(n, 10), true
			}
		case protoreflect.DoubleKind, protoreflect.FloatKind:
			s, ok = numberLabel(v.Float())
		}
		if ok {
			labels[string(fd.Name())] = s
		}
	}
}

func setLabel(labels map[string]string, k, v string) {
	if _, exists := labels[k]; exists {
		return
	}
	if s, ok := stringLabel(strings.TrimSpace(v)); ok {
		labels[k] = s
	}
}

func setNumber(labels map[string]string, k string, n int64) {
	if _, exists := labels[k]; !exists && n > 0 {
		labels[k] = strconv.FormatInt(n, 10)
	}
}
