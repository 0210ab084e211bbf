package api

import (
	"encoding/json"
	"reflect"

	"github.com/danielgtaylor/huma/v2"
)

// The union types below are request and response fields that OpenAI and Anthropic define as
// "one of" several JSON shapes (a string or an array of parts, ...). They only describe the
// document: the gateway relays bodies byte for byte and never decodes into these types.

// StringOrArray is a field that is a string or an array of strings (stop, a batched prompt).
type StringOrArray json.RawMessage

// Schema implements huma.SchemaProvider: oneOf string, array of strings.
func (StringOrArray) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{OneOf: []*huma.Schema{
		{Type: huma.TypeString},
		{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}},
	}}
}

// PromptInput is a completions prompt: a string, strings, token ids, or batches of token
// ids (OpenAI's /v1/completions).
type PromptInput json.RawMessage

// Schema implements huma.SchemaProvider.
func (PromptInput) Schema(huma.Registry) *huma.Schema {
	ints := &huma.Schema{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeInteger}}
	return &huma.Schema{OneOf: []*huma.Schema{
		{Type: huma.TypeString},
		{Type: huma.TypeArray, Items: &huma.Schema{Type: huma.TypeString}},
		ints,
		{Type: huma.TypeArray, Items: ints},
	}}
}

// ContentParts is a message content: a string or an array of typed content parts (OpenAI
// chat {"type":"text","text"} / {"type":"image_url",...}; Anthropic blocks {"type":"text"},
// {"type":"image"}, {"type":"tool_use"}, {"type":"tool_result"}, ...). A part is any object
// with a "type".
type ContentParts json.RawMessage

// Schema implements huma.SchemaProvider: oneOf string, array of ContentPart.
func (ContentParts) Schema(r huma.Registry) *huma.Schema {
	return &huma.Schema{OneOf: []*huma.Schema{
		{Type: huma.TypeString},
		{Type: huma.TypeArray, Items: r.Schema(reflect.TypeFor[ContentPart](), true, "ContentPart")},
	}}
}

// ContentPart is one typed part of a message content; fields other than type depend on it.
type ContentPart struct {
	_    struct{} `additionalProperties:"true"`
	Type string   `json:"type" doc:"Part type, e.g. text, image_url (OpenAI); text, image, tool_use, tool_result, thinking (Anthropic)." example:"text"`
	Text string   `json:"text,omitempty" doc:"The text of a text part."`
}

// AnyJSON is a field of any JSON type (tool_choice, response_format, ...): the engines
// define it and the gateway relays it.
type AnyJSON json.RawMessage

// Schema implements huma.SchemaProvider: an empty schema (any value).
func (AnyJSON) Schema(huma.Registry) *huma.Schema { return &huma.Schema{} }

// Object is a JSON object whose keys and values the engine defines (metadata, sampling
// parameters, meta_info), null values included.
type Object map[string]any

// Schema implements huma.SchemaProvider: an object with any properties ("additionalProperties:
// true" rather than an empty schema, which OpenAPI 3.0 validators read as non-nullable).
func (Object) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeObject, AdditionalProperties: true}
}

// nullableCopy is the schema of the named struct type t, inlined and nullable: huma refuses
// nullable references to objects, and engines send "usage": null on stream chunks and
// in-progress responses. The schema is built in a scratch registry so that no unused
// component is left in the document; a type whose fields need components of their own is
// registered in r as well, so its references resolve.
func nullableCopy(r huma.Registry, t reflect.Type, name string) *huma.Schema {
	scratch := huma.NewMapRegistry("#/components/schemas/", huma.DefaultSchemaNamer)
	ref := scratch.Schema(t, true, name)
	if len(scratch.Map()) != 1 {
		scratch = r
		ref = r.Schema(t, true, name)
	}
	s := *scratch.SchemaFromRef(ref.Ref)
	s.Nullable = true
	return &s
}

// UsageOrNull is Usage or null.
type UsageOrNull Usage

// Schema implements huma.SchemaProvider.
func (UsageOrNull) Schema(r huma.Registry) *huma.Schema {
	return nullableCopy(r, reflect.TypeFor[Usage](), "Usage")
}

// ResponsesUsageOrNull is ResponsesUsage or null.
type ResponsesUsageOrNull ResponsesUsage

// Schema implements huma.SchemaProvider.
func (ResponsesUsageOrNull) Schema(r huma.Registry) *huma.Schema {
	return nullableCopy(r, reflect.TypeFor[ResponsesUsage](), "ResponsesUsage")
}
