package handoff

import (
	"bytes"
	"errors"

	"github.com/smg-go/smg/domain/errs"
	"github.com/smg-go/smg/domain/jsonbody"
	"github.com/smg-go/smg/domain/wire"
)

// DoneEvent is the SSE event that ends an OpenAI-style stream.
const DoneEvent = "data: " + wire.SSEDone + "\n\n"

// DoneScanner finds the end-of-stream event in an SSE byte stream fed chunk by chunk, with
// the line-anchored rule of smg-spec.md §2.8.1 (test table T-HTTP-1, §11.2): the sentinel
// counts only as a complete event whose data is exactly "[DONE]" — one "data:" line
// ("data: [DONE]" or "data:[DONE]") starting at a line boundary and ended by a blank line
// (LF, CRLF or CR line ends, a CRLF may straddle chunks). "[DONE]" inside JSON, followed by
// more text, joined with another data line, or not yet terminated is not terminal. Unlike
// the chunk-local rule, an event split across chunks is recognised once its blank line
// arrives. Memory is O(1): nothing is buffered.
//
// The zero value expects the stream to start at a line boundary. A DoneScanner is not safe
// for concurrent use.
type DoneScanner struct {
	line     [12]byte // first bytes of the current line
	lineLen  int      // bytes in the current line (may exceed len(line))
	partial  bool     // the current line began before the scanner saw the stream
	pendCR   bool     // the last byte fed was a CR: a leading LF continues that line end
	dataSeen int      // data lines in the current event (capped at 2)
	doneLine bool     // the event's data line was exactly [DONE]
}

// Feed scans the next chunk. It returns done = true and end = the offset in chunk just past
// the terminating blank line when the [DONE] event completes inside this chunk; otherwise
// (len(chunk), false). Scanning may continue after a done event (state resets per event).
// A relay stops after writing chunk[:end] (or the whole chunk).
func (s *DoneScanner) Feed(chunk []byte) (end int, done bool) {
	i := 0
	if s.pendCR && len(chunk) > 0 {
		s.pendCR = false
		if chunk[0] == '\n' {
			i = 1
		}
	}
	for i < len(chunk) {
		j := indexEOL(chunk[i:])
		if j < 0 {
			s.appendLine(chunk[i:])
			return len(chunk), false
		}
		s.appendLine(chunk[i : i+j])
		next := i + j + 1
		if chunk[i+j] == '\r' {
			if next < len(chunk) {
				if chunk[next] == '\n' {
					next++
				}
			} else {
				s.pendCR = true
			}
		}
		if s.endLine() {
			return next, true
		}
		i = next
	}
	return len(chunk), false
}

func indexEOL(b []byte) int {
	for i, c := range b {
		if c == '\n' || c == '\r' {
			return i
		}
	}
	return -1
}

func (s *DoneScanner) appendLine(b []byte) {
	if s.lineLen < len(s.line) {
		copy(s.line[s.lineLen:], b)
	}
	s.lineLen += len(b)
}

// endLine processes a complete line and reports whether it was the blank line ending a
// [DONE] event.
func (s *DoneScanner) endLine() bool {
	n, partial := s.lineLen, s.partial
	s.lineLen, s.partial = 0, false
	if partial {
		return false // the rest of a line whose start was never seen: ignored
	}
	if n == 0 {
		done := s.dataSeen == 1 && s.doneLine
		s.dataSeen, s.doneLine = 0, false
		return done
	}
	line := s.line[:min(n, len(s.line))]
	if !bytes.HasPrefix(line, []byte("data")) || (n > 4 && line[4] != ':') {
		return false // comment, other field, or a field name longer than "data"
	}
	if s.dataSeen < 2 {
		s.dataSeen++
	}
	s.doneLine = (n == 12 && string(line) == "data: [DONE]") || (n == 11 && string(line[:11]) == "data:[DONE]")
	return false
}

// ChunkHasDone is the stateless, chunk-local form of the rule (smg-spec.md §11.2 T-HTTP-1):
// it reports whether chunk alone contains a complete [DONE] event. atLineStart tells whether
// the previous chunk ended with CR or LF; when false, the bytes up to the first line end are
// treated as the tail of an unknown line.
func ChunkHasDone(chunk []byte, atLineStart bool) bool {
	s := DoneScanner{partial: !atLineStart}
	_, done := s.Feed(chunk)
	return done
}

// DefaultMaxEvent bounds the size of one SSE event an EventSplitter buffers: 16 MiB.
const DefaultMaxEvent = 16 << 20

// ErrEventTooLarge is returned by EventSplitter.Write when an incomplete event exceeds the
// splitter's bound.
var ErrEventTooLarge = errors.New("SSE event exceeds the size bound")

// EventSplitter frames an SSE byte stream into complete events for the rewriting relays
// (logprob merge, n>1 fan-in). Each event is returned with its terminating blank line, as
// received. Not safe for concurrent use.
type EventSplitter struct {
	// Max bounds the bytes of one incomplete event; 0 means DefaultMaxEvent.
	Max   int
	buf   []byte
	start int // start of the next event to return
	pos   int // start of the next line to scan (a line boundary >= start)
}

// Write appends a chunk. Events returned by Next before this call become invalid. Call Next
// until it reports false after every Write: the bound counts every buffered byte. It fails
// with ErrEventTooLarge when the buffered bytes exceed Max; the relay should then fail the
// stream (or fall back to passing bytes through unmodified).
func (s *EventSplitter) Write(p []byte) error {
	if s.start > 0 {
		n := copy(s.buf, s.buf[s.start:])
		s.buf = s.buf[:n]
		s.pos -= s.start
		s.start = 0
	}
	s.buf = append(s.buf, p...)
	limit := s.Max
	if limit <= 0 {
		limit = DefaultMaxEvent
	}
	if len(s.buf) > limit {
		return ErrEventTooLarge
	}
	return nil
}

// Next returns the next complete event (aliasing the splitter's buffer, valid until the next
// Write) and true, or nil and false when no complete event is buffered. A CR line end at the
// very end of the buffer waits for the next byte (it may be a CRLF).
func (s *EventSplitter) Next() ([]byte, bool) {
	for s.pos < len(s.buf) {
		j := indexEOL(s.buf[s.pos:])
		if j < 0 {
			return nil, false
		}
		eol := s.pos + j
		next := eol + 1
		if s.buf[eol] == '\r' {
			if next == len(s.buf) {
				return nil, false
			}
			if s.buf[next] == '\n' {
				next++
			}
		}
		blank := eol == s.pos
		s.pos = next
		if blank {
			ev := s.buf[s.start:next:next]
			s.start = next
			return ev, true
		}
	}
	return nil, false
}

// Flush returns the buffered bytes that do not form a complete event (at end of stream) and
// resets the splitter.
func (s *EventSplitter) Flush() []byte {
	rest := s.buf[s.start:]
	s.buf, s.start, s.pos = nil, 0, 0
	return rest
}

// EventData returns the payload of an event that consists of exactly one "data:" line and
// its terminating blank line (the shape engines emit), without the optional space after
// the colon; ok is false for any other shape (comments, several fields, no terminator).
func EventData(event []byte) (data []byte, ok bool) {
	rest, found := bytes.CutPrefix(event, []byte("data:"))
	if !found {
		return nil, false
	}
	rest = bytes.TrimPrefix(rest, []byte(" "))
	j := indexEOL(rest)
	if j < 0 {
		return nil, false
	}
	data, tail := rest[:j], rest[j:]
	switch string(tail) {
	case "\n\n", "\r\n\r\n", "\r\r":
		return data, true
	}
	return nil, false
}

// IsDoneEvent reports whether event is a single data line whose payload is "[DONE]".
func IsDoneEvent(event []byte) bool {
	d, ok := EventData(event)
	return ok && string(d) == wire.SSEDone
}

// DataEvent frames a JSON payload as "data: <payload>\n\n".
func DataEvent(payload []byte) []byte {
	out := make([]byte, 0, len(payload)+8)
	out = append(out, "data: "...)
	out = append(out, payload...)
	return append(out, '\n', '\n')
}

// ErrorEvent builds the terminal event pair a stream ends with when a leg fails after the
// response started (seed "Failures, Cancellation, and Streaming"; engines.md §3.4):
// `data: {"error":{"type":...,"code":...,"message":...,"param":null}}\n\n` — the gateway's
// error body shape (smg-spec.md §6.1) — followed by `data: [DONE]\n\n`. Strings are
// JSON-escaped (smg-spec.md §11.2 T-HTTP-12).
func ErrorEvent(message, typ, code string) []byte {
	out := make([]byte, 0, len(message)+len(typ)+len(code)+88)
	out = append(out, `data: {"error":{"type":`...)
	out = jsonbody.AppendString(out, typ)
	out = append(out, `,"code":`...)
	out = jsonbody.AppendString(out, code)
	out = append(out, `,"message":`...)
	out = jsonbody.AppendString(out, message)
	out = append(out, `,"param":null}}`+"\n\n"...)
	return append(out, DoneEvent...)
}

// StreamError is ErrorEvent for a gateway error: its message, its status's errs.Type as
// the type, and its code.
func StreamError(e *errs.Error) []byte {
	return ErrorEvent(e.Message, errs.Type(e.Status), e.Code)
}
