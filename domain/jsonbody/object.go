// Package jsonbody reads and patches JSON request bodies at the byte level, without decoding
// and re-encoding the whole document: unknown fields, number spellings, whitespace and key
// order survive, and only the edited values change. The gateway uses it to add the KV handoff
// fields (bootstrap_room, kv_transfer_params, ...) to client bodies (seed "Parallel Dispatch":
// "patch the JSON body bytes"; smg-spec.md §2.5.1: injected keys are appended at the end in
// insertion order).
//
// Parse validates a document with the same acceptance as encoding/json.Valid and indexes the
// top-level object's members; Get returns a member's raw value bytes; Edit starts a Patch that
// sets, replaces or deletes members (nested objects by recursion) and renders the new body
// into one exactly sized allocation. The value helpers (Bool, Int, String, ArrayLen, ...) read
// small typed values from raw bytes.
//
// Duplicate keys follow encoding/json: Get returns the last occurrence; Set overwrites every
// occurrence and Delete removes every occurrence, so any JSON parser sees the intended value.
package jsonbody

import "iter"

// member locates one "key": value pair in the source. kStart/kEnd bound the key's quoted
// text including quotes; vStart/vEnd bound the raw value.
type member struct {
	kStart, kEnd, vStart, vEnd int
	simple                     bool // key is ASCII without escapes: compare bytes directly
}

// Object is a validated JSON object with an index of its top-level members. It references the
// source bytes, which must not be modified while the Object (or a Patch of it) is in use.
// An Object is read-only and safe for concurrent readers.
type Object struct {
	src     []byte
	open    int // offset of '{'
	close   int // offset of '}'
	members []member
	inline  [16]member
}

// Parse validates src as one JSON document whose top-level value is an object and indexes
// its members. Errors: a *SyntaxError (wrapping ErrInvalidJSON) for malformed JSON, or an
// error wrapping ErrNotObject for valid JSON of another kind. Cost: one pass over src, one
// allocation (plus one more for objects with more than 16 members).
func Parse(src []byte) (*Object, error) {
	o := &Object{src: src}
	o.members = o.inline[:0]
	i := skipWS(src, 0)
	if i >= len(src) {
		return nil, syntaxErr(src, i, "")
	}
	if src[i] != '{' {
		end, err := scanValue(src, i, 0)
		if err != nil {
			return nil, err
		}
		if j := skipWS(src, end); j != len(src) {
			return nil, syntaxErr(src, j, "after top-level value")
		}
		return nil, notObject(src[i])
	}
	o.open = i
	i = skipWS(src, i+1)
	if i < len(src) && src[i] == '}' {
		o.close = i
		return o.finish(i + 1)
	}
	for {
		if i >= len(src) || src[i] != '"' {
			return nil, syntaxErr(src, i, "looking for beginning of object key string")
		}
		kEnd, escaped, err := scanString(src, i)
		if err != nil {
			return nil, err
		}
		m := member{kStart: i, kEnd: kEnd, simple: !escaped && isASCII(src[i+1:kEnd-1])}
		i = skipWS(src, kEnd)
		if i >= len(src) || src[i] != ':' {
			return nil, syntaxErr(src, i, "after object key")
		}
		i = skipWS(src, i+1)
		m.vStart = i
		if m.vEnd, err = scanValue(src, i, 1); err != nil {
			return nil, err
		}
		o.members = append(o.members, m)
		i = skipWS(src, m.vEnd)
		if i >= len(src) {
			return nil, syntaxErr(src, i, "")
		}
		switch src[i] {
		case ',':
			i = skipWS(src, i+1)
		case '}':
			o.close = i
			return o.finish(i + 1)
		default:
			return nil, syntaxErr(src, i, "after object key:value pair")
		}
	}
}

func (o *Object) finish(end int) (*Object, error) {
	if j := skipWS(o.src, end); j != len(o.src) {
		return nil, syntaxErr(o.src, j, "after top-level value")
	}
	return o, nil
}

func notObject(first byte) error {
	kind := "a number"
	switch first {
	case '[':
		kind = "an array"
	case '"':
		kind = "a string"
	case 't', 'f':
		kind = "a boolean"
	case 'n':
		kind = "null"
	}
	return &kindError{kind: kind}
}

type kindError struct{ kind string }

func (e *kindError) Error() string { return ErrNotObject.Error() + " (found " + e.kind + ")" }
func (e *kindError) Unwrap() error { return ErrNotObject }

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// Bytes returns the source document (not a copy).
func (o *Object) Bytes() []byte { return o.src }

// Len is the number of members, duplicates included.
func (o *Object) Len() int { return len(o.members) }

// keyIs reports whether member m's decoded key equals key.
func (o *Object) keyIs(m *member, key string) bool {
	raw := o.src[m.kStart+1 : m.kEnd-1]
	if m.simple {
		return string(raw) == key
	}
	return unquoteBytes(raw) == key
}

func (o *Object) key(m *member) string {
	raw := o.src[m.kStart+1 : m.kEnd-1]
	if m.simple {
		return string(raw)
	}
	return unquoteBytes(raw)
}

// Get returns the raw bytes of key's value (the last occurrence, as encoding/json decodes
// duplicates) and whether the key is present. The slice aliases the source.
func (o *Object) Get(key string) (raw []byte, ok bool) {
	for i := len(o.members) - 1; i >= 0; i-- {
		m := &o.members[i]
		if o.keyIs(m, key) {
			return o.src[m.vStart:m.vEnd:m.vEnd], true
		}
	}
	return nil, false
}

// Has reports whether key is present.
func (o *Object) Has(key string) bool {
	_, ok := o.Get(key)
	return ok
}

// Members iterates over the members in source order (duplicates included), yielding the
// decoded key and the raw value bytes.
func (o *Object) Members() iter.Seq2[string, []byte] {
	return func(yield func(string, []byte) bool) {
		for i := range o.members {
			m := &o.members[i]
			if !yield(o.key(m), o.src[m.vStart:m.vEnd:m.vEnd]) {
				return
			}
		}
	}
}

// Keys returns the decoded keys in source order (duplicates included).
func (o *Object) Keys() []string {
	keys := make([]string, len(o.members))
	for i := range o.members {
		keys[i] = o.key(&o.members[i])
	}
	return keys
}
