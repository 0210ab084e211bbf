package respond

import (
	"strconv"

	"github.com/smg-go/smg/domain/jsonbody"
)

// chunkHead is the part of an OpenAI stream chunk that is the same in every event of a
// stream, up to the first choice's index: `data: {"id":…,"object":…,"created":…,"model":…,
// "choices":[{"index":` (the field order of completionBody and chatChunk).
func chunkHead(m Meta, object string) []byte {
	b := append(make([]byte, 0, 96+len(m.ID)+len(m.Model)), `data: {"id":`...)
	b = jsonbody.AppendStringHTML(b, m.ID)
	b = append(b, `,"object":`...)
	b = jsonbody.AppendStringHTML(b, object)
	b = append(b, `,"created":`...)
	b = strconv.AppendInt(b, m.Created, 10)
	b = append(b, `,"model":`...)
	b = jsonbody.AppendStringHTML(b, m.Model)
	return append(b, `,"choices":[{"index":`...)
}

// textChunk is the event of one choice whose delta is only text: head, the index, then
// field, the text as a JSON string, and tail. It is byte for byte what sseData writes for
// the same chunk (TestTextChunksMatchTheMarshalledOnes), without reflection and in one
// allocation.
func textChunk(head []byte, index int, field, text, tail string) []byte {
	out := make([]byte, 0, len(head)+len(field)+len(text)+len(tail)+24)
	out = append(out, head...)
	out = strconv.AppendInt(out, int64(index), 10)
	out = append(out, field...)
	out = jsonbody.AppendStringHTML(out, text)
	return append(out, tail...)
}
