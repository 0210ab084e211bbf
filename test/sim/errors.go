package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// Engine error shapes (engines.md §2.2, §3.4):
//   - SGLang: status < 500 → {"error":{"message":...}} (_create_error_response);
//     status ≥ 500 → {"detail":...} (fastapi.HTTPException from a scheduler abort).
//   - vLLM: {"error":{"message","type","param","code"}} with code = HTTP status.
//
// In a stream both engines send one `data: {"error":{...}}` event, then `data: [DONE]`.

type sglangError struct {
	Error struct {
		Message string `json:"message"`
	} `json:"error"`
}

type sglangDetail struct {
	Detail string `json:"detail"`
}

type vllmErrorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

type vllmError struct {
	Error vllmErrorInfo `json:"error"`
}

// vllmErrorType is the "type" vLLM reports for an HTTP status.
func vllmErrorType(status int) string {
	switch status {
	case 401:
		return "AuthenticationError"
	case 403:
		return "PermissionDeniedError"
	case 404:
		return "NotFoundError"
	case 408:
		return "TimeoutError"
	case 422:
		return "UnprocessableEntityError"
	case 429:
		return "RateLimitError"
	case 501:
		return "NotImplementedError"
	case 503:
		return "ServiceUnavailableError"
	}
	if status >= 500 {
		return "InternalServerError"
	}
	return "BadRequestError"
}

// errorBody renders e in the engine's non-stream shape.
func errorBody(engine string, e *reqError) []byte {
	var v any
	if engine == EngineVLLM {
		info := vllmErrorInfo{Message: e.msg, Type: vllmErrorType(e.status), Code: e.status}
		if e.param != "" {
			p := e.param
			info.Param = &p
		}
		v = vllmError{Error: info}
	} else if e.status >= 500 {
		v = sglangDetail{Detail: e.msg}
	} else {
		var s sglangError
		s.Error.Message = e.msg
		v = s
	}
	b, _ := json.Marshal(v)
	return b
}

// streamErrorEvent renders e as the SSE event an engine sends mid-stream (without [DONE]).
func streamErrorEvent(engine string, e *reqError) []byte {
	var v any
	if engine == EngineVLLM {
		v = vllmError{Error: vllmErrorInfo{Message: e.msg, Type: vllmErrorType(e.status), Code: e.status}}
	} else {
		var s sglangError
		s.Error.Message = e.msg
		v = s
	}
	b, _ := json.Marshal(v)
	out := make([]byte, 0, len(b)+8)
	out = append(out, "data: "...)
	out = append(out, b...)
	return append(out, "\n\n"...)
}

func writeJSONStatus(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
