package handoff

import "github.com/smg-go/smg/domain/jsonbody"

// EngineErrorCode returns the numeric code of an engine's in-stream error event payload
// (vLLM: `{"error": {"message": …, "type": …, "code": 500}}`, the ErrorResponse its
// streaming generators send after their 200 head; engines.md §3), or 0 when the payload is
// no error event or its code is not an integer.
func EngineErrorCode(payload []byte) int {
	if _, ok := EngineErrorEvent(payload); !ok {
		return 0
	}
	e, _ := jsonbody.Member(payload, "error")
	if jsonbody.KindOf(e) != jsonbody.KindObject {
		return 0
	}
	c, ok := jsonbody.Member(e, "code")
	if !ok {
		return 0
	}
	n, ok := jsonbody.Int(c)
	if !ok || n < 100 || n > 599 {
		return 0
	}
	return int(n)
}

// RoleOnlyChunk reports whether payload is a chat completion chunk that carries no output:
// every choice's delta has at most a role and an empty or null content, and no
// finish_reason. vLLM sends one first on every chat stream, before it knows whether the
// request will generate at all (a KV load that fails follows it as an error event), so it
// is not yet the decode's first output.
func RoleOnlyChunk(payload []byte) bool {
	choices, ok := jsonbody.Member(payload, "choices")
	if !ok {
		return false
	}
	n := 0
	for _, c := range jsonbody.Elements(choices) {
		n++
		if fr, ok := jsonbody.Member(c, "finish_reason"); ok && !jsonbody.IsNull(fr) {
			return false
		}
		delta, ok := jsonbody.Member(c, "delta")
		if !ok || jsonbody.KindOf(delta) != jsonbody.KindObject {
			return false
		}
		obj, err := jsonbody.Parse(delta)
		if err != nil {
			return false
		}
		for k, v := range obj.Members() {
			switch k {
			case "role":
			case "content":
				if s, ok := jsonbody.String(v); !(ok && s == "") && !jsonbody.IsNull(v) {
					return false
				}
			default:
				return false
			}
		}
	}
	return n > 0
}
