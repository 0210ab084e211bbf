package handoff

import (
	"bytes"
	"errors"
	"strings"

	"github.com/smg-go/smg/domain/jsonbody"
)

// ErrMalformedEvent is returned by LineGuard.Feed for a data line that is neither JSON nor
// [DONE]: an engine answering 200 with a garbled stream.
var ErrMalformedEvent = errors.New("stream event whose data is not valid JSON")

// LineGuard checks an engine's SSE stream line by line as it is relayed: every `data:` line
// must carry one JSON value or `[DONE]` (SGLang and vLLM write each event as one data line;
// engines.md §2, §3). Only complete, checked lines are emitted, so a garbled event never
// reaches the client: a partial last line is held until its newline arrives (engines flush
// whole events, so this holds back nothing in practice). Comment, event:, id: and blank
// lines pass unchecked. The zero value is ready; not safe for concurrent use.
type LineGuard struct {
	carry []byte // a partial line from earlier chunks, not yet emitted
	// First is the payload of the first data line seen (nil before it), for callers that
	// look at the first event before committing a response (an engine error event).
	First []byte
	// FirstOutput is the payload of the first data line that is not a RoleOnlyChunk (nil
	// before it): the stream's first output, or its first error event. Kept only when
	// WantFirstOutput is set (it costs a copy per stream).
	FirstOutput     []byte
	WantFirstOutput bool
}

// Feed checks chunk and calls emit with the spans of complete, valid lines in order (each
// span aliases chunk or the guard's buffer and is valid only during the call). It returns
// ErrMalformedEvent at the first invalid data line — the spans before it were emitted, the
// line itself was not — or the first error emit returned.
func (g *LineGuard) Feed(chunk []byte, emit func([]byte) error) error {
	for len(chunk) > 0 {
		nl := bytes.IndexByte(chunk, '\n')
		if nl < 0 {
			g.carry = append(g.carry, chunk...)
			return nil
		}
		if len(g.carry) > 0 {
			g.carry = append(g.carry, chunk[:nl+1]...)
			chunk = chunk[nl+1:]
			if !g.check(g.carry) {
				g.carry = g.carry[:0]
				return ErrMalformedEvent
			}
			err := emit(g.carry)
			g.carry = g.carry[:0]
			if err != nil {
				return err
			}
			continue
		}
		// Emit the run of complete lines of chunk in one span.
		end := 0
		for end < len(chunk) {
			nl := bytes.IndexByte(chunk[end:], '\n')
			if nl < 0 {
				break
			}
			if !g.check(chunk[end : end+nl+1]) {
				if end > 0 {
					if err := emit(chunk[:end]); err != nil {
						return err
					}
				}
				return ErrMalformedEvent
			}
			end += nl + 1
		}
		if err := emit(chunk[:end]); err != nil {
			return err
		}
		chunk = chunk[end:]
	}
	return nil
}

// Pending reports whether a partial line is held (a stream that ends here ended mid-line).
func (g *LineGuard) Pending() bool { return len(g.carry) > 0 }

// check validates one line (with its newline).
func (g *LineGuard) check(line []byte) bool {
	line = bytes.TrimRight(line, "\r\n")
	payload, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return true
	}
	payload = bytes.TrimLeft(payload, " ")
	if g.First == nil {
		g.First = append([]byte{}, payload...)
	}
	if g.WantFirstOutput && g.FirstOutput == nil && !RoleOnlyChunk(payload) {
		g.FirstOutput = append([]byte{}, payload...)
	}
	if string(payload) == "[DONE]" {
		return true
	}
	return jsonbody.Valid(payload)
}

// IsKVTransferFailure reports whether an engine's error message says the KV handoff itself
// failed — SGLang's `KVTransferError(bootstrap_room=…)` and its `KVPoll.Bootstrapping` /
// `KVPoll.WaitingForInput` / `KVPoll.Transferring` timeouts (engines.md §2.4) — rather
// than the request. Such an error names the leg's peer: the engine gave up waiting for it.
func IsKVTransferFailure(msg string) bool {
	return strings.Contains(msg, "KVTransferError") || strings.Contains(msg, "KVPoll.")
}

// EngineErrorEvent returns the message of an engine's in-stream error event payload
// (`{"error": {"message": …}}` or `{"error": "…"}`, as SGLang streams a failure after its
// 200 head; engines.md §2.3), and whether the payload is one.
func EngineErrorEvent(payload []byte) (string, bool) {
	if !jsonbody.Valid(payload) {
		return "", false
	}
	raw, ok := jsonbody.Member(payload, "error") // false too when payload is not an object
	if !ok {
		return "", false
	}
	if jsonbody.KindOf(raw) == jsonbody.KindObject {
		if m, ok := jsonbody.Member(raw, "message"); ok {
			return unquote(m), true
		}
		return string(raw), true
	}
	return unquote(raw), true
}

// unquote returns a JSON string's text, or the raw bytes when it is not a plain string.
func unquote(raw []byte) string {
	if s, ok := jsonbody.String(raw); ok {
		return s
	}
	return string(raw)
}
