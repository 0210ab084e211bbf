package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/handoff"
	"github.com/smg-go/smg/domain/text"
)

// checkSamples refuses an n above the gateway's fan-out limit (handoff.MaxSamples) with the
// HTTP PD path's 400 invalid_request and message, before any leg or decode room.
func checkSamples(n int) error {
	if n > handoff.MaxSamples {
		return errs.BadRequest("n=%d exceeds the gateway's fan-out limit of %d samples", n, handoff.MaxSamples)
	}
	return nil
}

// bodyError is the 400 of a body that does not decode into clientBody: a JSON type error
// names the field and the kind of value it takes ("Invalid value for field 'max_tokens':
// expected a non-negative integer"), a syntax error says the body is not valid JSON; no Go
// type or struct names reach the client.
func bodyError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := strings.TrimPrefix(te.Field, "knobs.")
		field = strings.ReplaceAll(field, ".knobs.", ".")
		if field == "" {
			return errs.BadRequest("the request body must be a JSON object")
		}
		return errs.BadRequest("Invalid value for field '%s': expected %s", field, kindName(te.Type))
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return errs.BadRequest("the request body is not valid JSON (at byte %d)", se.Offset)
	}
	return errs.BadRequest("the request body is not valid JSON")
}

// kindName is the JSON kind of value a Go type takes, as a client reads it.
func kindName(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a valid value"
	}
	switch t.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a non-negative integer"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() >= reflect.Uint && t.Elem().Kind() <= reflect.Uint64 {
			return "an array of non-negative integers"
		}
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "a valid value"
}

// chatRoles are the roles a chat message may take (OpenAI Chat Completions: developer,
// system, user, assistant, tool, and the deprecated function, which vLLM also accepts).
var chatRoles = map[string]bool{"system": true, "user": true, "assistant": true, "tool": true, "developer": true, "function": true}

// checkMessages requires a Chat Completions "messages" to be a non-empty array of objects
// whose role is one of chatRoles.
func checkMessages(raw json.RawMessage) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return errs.BadRequest("messages is required")
	}
	var msgs []json.RawMessage
	if raw[0] != '[' || json.Unmarshal(raw, &msgs) != nil {
		return errs.BadRequest("Invalid value for field 'messages': expected an array of message objects")
	}
	if len(msgs) == 0 {
		return errs.BadRequest("Invalid value for field 'messages': expected a non-empty array")
	}
	for i, m := range msgs {
		var one struct {
			Role json.RawMessage `json:"role"`
		}
		if m = bytes.TrimSpace(m); len(m) == 0 || m[0] != '{' || json.Unmarshal(m, &one) != nil {
			return errs.BadRequest("Invalid value for field 'messages[%d]': expected a message object", i)
		}
		var role string
		if json.Unmarshal(one.Role, &role) != nil {
			return errs.BadRequest("Invalid value for field 'messages[%d].role': expected one of system, user, assistant, tool, developer", i)
		}
		if !chatRoles[role] {
			return errs.BadRequest("Invalid value for field 'messages[%d].role': '%s' is not one of system, user, assistant, tool, developer", i, role)
		}
	}
	return nil
}

// maxTokensField is the name the route gives its output-token cap.
func maxTokensField(r handoff.Route, b *clientBody) string {
	switch {
	case r == handoff.RouteGenerate && b.SamplingParams != nil:
		if b.SamplingParams.MaxTokens != nil {
			return "sampling_params.max_tokens"
		}
		return "sampling_params.max_new_tokens"
	case r == handoff.RouteChat && b.MaxCompletionTokens != nil:
		return "max_completion_tokens"
	case r == handoff.RouteResponses:
		return "max_output_tokens"
	}
	return "max_tokens"
}

// checkKnobs bounds the sampling fields as vLLM's SamplingParams and OpenAI do: the output
// cap at least 1 (vLLM: "max_tokens must be at least 1"), temperature >= 0 (and <= 2 on
// the OpenAI routes, <= 1 on /v1/messages as Anthropic), top_p in (0, 1], top_k -1
// (disabled), 0 or more.
func checkKnobs(r handoff.Route, b *clientBody, k *knobs) error {
	prefix := ""
	if r == handoff.RouteGenerate && b.SamplingParams != nil {
		prefix = "sampling_params."
	}
	if k.MaxTokens != nil && *k.MaxTokens < 1 {
		return errs.BadRequest("Invalid value for field '%s': must be at least 1, got %d", maxTokensField(r, b), *k.MaxTokens)
	}
	if t := k.Temperature; t != nil {
		hi := float32(2)
		switch r {
		case handoff.RouteMessages:
			hi = 1
		case handoff.RouteGenerate:
			hi = -1 // SGLang bounds temperature below only
		}
		if *t < 0 || (hi > 0 && *t > hi) {
			if hi > 0 {
				return errs.BadRequest("Invalid value for field '%stemperature': must be between 0 and %g, got %g", prefix, hi, *t)
			}
			return errs.BadRequest("Invalid value for field '%stemperature': must be non-negative, got %g", prefix, *t)
		}
	}
	if p := k.TopP; p != nil && (*p <= 0 || *p > 1) {
		return errs.BadRequest("Invalid value for field '%stop_p': must be in (0, 1], got %g", prefix, *p)
	}
	if tk := k.TopK; tk != nil && *tk < -1 {
		return errs.BadRequest("Invalid value for field '%stop_k': must be -1 (disabled) or at least 0, got %d", prefix, *tk)
	}
	return nil
}

// checkVocab refuses prompt token ids outside the tokenizer's vocabulary (an engine would
// fail or index out of its embedding table).
func checkVocab(ps []prompt, tok *text.Tokenizer, field string) error {
	size := tok.VocabSize()
	if size <= 0 {
		return nil
	}
	for _, p := range ps {
		for _, id := range p.ids {
			if int64(id) >= int64(size) {
				return errs.BadRequest("Invalid value for field '%s': token id %d is outside the model's vocabulary (0..%d)", field, id, size-1)
			}
		}
	}
	return nil
}

// templateError is the 400 of a chat template that failed: its message once (text's
// errors already start with "chat template").
func templateError(err error) error {
	if errors.Is(err, text.ErrTemplate) {
		return errs.BadRequest("%v", strings.TrimSuffix(err.Error(), ": <nil>"))
	}
	return errs.BadRequest("chat template: %v", err)
}
