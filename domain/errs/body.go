package errs

import "encoding/json"

// body is the gateway's error shape (smg-spec.md §6.1): key order type, code, message, param.
type body struct {
	Error info `json:"error"`
}

type info struct {
	Type    string  `json:"type"`
	Code    string  `json:"code"`
	Message string  `json:"message"`
	Param   *string `json:"param"`
}

// Body renders e as {"error":{"type":<Type(status)>,"code":<code>,"message":<text>,"param":null}},
// the body of every data-plane error (one shape for the dispatcher and the API adapter).
func Body(e *Error) []byte {
	b, _ := json.Marshal(body{Error: info{Type: Type(e.Status), Code: e.Code, Message: e.Message}})
	return b
}
