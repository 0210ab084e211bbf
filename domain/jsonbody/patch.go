package jsonbody

import (
	"fmt"
	"strconv"
	"sync"
)

type editKind uint8

const (
	editRaw editKind = iota
	editString
	editInt
	editUint
	editBool
	editNull
	editSub
	editDelete
)

// edit is the final state of one key after all of a Patch's operations.
type edit struct {
	key  string
	kind editKind
	raw  []byte // editRaw
	str  string // editString
	num  uint64 // editInt (as int64 bits), editUint, editBool (0/1)
	sub  *Patch // editSub
	seen bool   // render scratch: the key occurs in the source
}

// Patch is a set of edits to an Object's top-level members, rendered by Bytes. Semantics:
// a key present in the source keeps its position (every occurrence is rewritten or removed);
// a new key is appended after the last member, in the order of its first Set. A later
// operation on the same key replaces an earlier one. The source is never modified.
//
// A Patch is not safe for concurrent use. Raw values passed to Set are referenced, not
// copied: they must stay unchanged until Bytes returns.
type Patch struct {
	obj    *Object
	edits  []edit
	inline [8]edit
}

// patches recycles released Patches (about 770 bytes each): a gateway builds one or two per
// request and drops them once the leg bodies are rendered.
var patches = sync.Pool{New: func() any { return new(Patch) }}

// Edit starts an empty Patch of o.
func (o *Object) Edit() *Patch {
	p := patches.Get().(*Patch)
	p.obj = o
	p.edits = p.inline[:0]
	return p
}

// Release hands p, with the nested Patches Nested returned from it, back for reuse by a
// later Edit. Neither may be used afterwards. Bytes already rendered (Bytes, AppendTo) and
// the Object stay valid: they never alias the Patch. Releasing is optional (an unreleased
// Patch is garbage collected); releasing one twice is a bug.
func (p *Patch) Release() {
	for i := range p.edits {
		if sub := p.edits[i].sub; sub != nil {
			sub.Release()
		}
	}
	*p = Patch{} // drop every reference into sources and values
	patches.Put(p)
}

// Object returns the Object the patch applies to.
func (p *Patch) Object() *Object { return p.obj }

func (p *Patch) find(key string) *edit {
	for i := range p.edits {
		if p.edits[i].key == key {
			return &p.edits[i]
		}
	}
	return nil
}

func (p *Patch) put(e edit) *Patch {
	if old := p.find(e.key); old != nil {
		*old = e
		return p
	}
	p.edits = append(p.edits, e)
	return p
}

// Set sets key to raw, which must be exactly one valid JSON value (Set does not check it;
// see Valid). Overwrites in place when the key exists, else appends.
func (p *Patch) Set(key string, raw []byte) *Patch {
	return p.put(edit{key: key, kind: editRaw, raw: raw})
}

// SetString sets key to the JSON string encoding of v (see AppendString).
func (p *Patch) SetString(key, v string) *Patch {
	return p.put(edit{key: key, kind: editString, str: v})
}

// SetInt sets key to the integer v.
func (p *Patch) SetInt(key string, v int64) *Patch {
	return p.put(edit{key: key, kind: editInt, num: uint64(v)})
}

// SetUint sets key to the unsigned integer v (e.g. a bootstrap room).
func (p *Patch) SetUint(key string, v uint64) *Patch {
	return p.put(edit{key: key, kind: editUint, num: v})
}

// SetBool sets key to true or false.
func (p *Patch) SetBool(key string, v bool) *Patch {
	var n uint64
	if v {
		n = 1
	}
	return p.put(edit{key: key, kind: editBool, num: n})
}

// SetNull sets key to null.
func (p *Patch) SetNull(key string) *Patch {
	return p.put(edit{key: key, kind: editNull})
}

// present reports whether key exists once the edits so far are applied.
func (p *Patch) present(key string) bool {
	if e := p.find(key); e != nil {
		return e.kind != editDelete
	}
	return p.obj.Has(key)
}

// Replace sets key to raw only when the key is present (after earlier edits); it reports
// whether it did. Use it for "set n to 1 if present".
func (p *Patch) Replace(key string, raw []byte) bool {
	if !p.present(key) {
		return false
	}
	p.Set(key, raw)
	return true
}

// ReplaceInt is Replace with an integer value.
func (p *Patch) ReplaceInt(key string, v int64) bool {
	if !p.present(key) {
		return false
	}
	p.SetInt(key, v)
	return true
}

// Delete removes every occurrence of key (no-op when absent).
func (p *Patch) Delete(key string) *Patch {
	return p.put(edit{key: key, kind: editDelete})
}

// Nested returns a Patch of the object stored under key, for edits such as
// sampling_params.n. When key holds an object (in the source, or set raw earlier) the nested
// patch edits it in place; when key is absent or null, it edits a new empty object that is
// appended. Calling Nested twice for one key returns the same Patch. The error wraps
// ErrNotObject when key holds another kind of value.
func (p *Patch) Nested(key string) (*Patch, error) {
	if e := p.find(key); e != nil {
		switch e.kind {
		case editSub:
			return e.sub, nil
		case editRaw:
			if IsNull(e.raw) {
				return p.nestRaw(key, []byte("{}"))
			}
			return p.nestRaw(key, e.raw)
		case editNull, editDelete:
			return p.nestRaw(key, []byte("{}"))
		}
		return nil, fmt.Errorf("%q: %w (found %s)", key, ErrNotObject, kindOfEdit(e.kind))
	}
	raw, ok := p.obj.Get(key)
	if !ok || IsNull(raw) {
		raw = []byte("{}")
	}
	return p.nestRaw(key, raw)
}

func kindOfEdit(k editKind) Kind {
	switch k {
	case editString:
		return KindString
	case editInt, editUint:
		return KindNumber
	case editBool:
		return KindBool
	}
	return KindInvalid
}

func (p *Patch) nestRaw(key string, raw []byte) (*Patch, error) {
	inner, err := Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%q: %w", key, err)
	}
	sub := inner.Edit()
	p.put(edit{key: key, kind: editSub, sub: sub})
	return sub, nil
}

// Len returns the exact length of the rendered body (it mirrors AppendTo).
func (p *Patch) Len() int {
	o := p.obj
	if len(p.edits) == 0 {
		return len(o.src)
	}
	for i := range p.edits {
		p.edits[i].seen = false
	}
	var n int
	if len(o.members) == 0 {
		n = len(o.src) // head up to '}' plus the tail from '}'
	} else {
		n = o.members[0].kStart + len(o.src) - o.members[len(o.members)-1].vEnd
	}
	kept := 0
	for i := range o.members {
		m := &o.members[i]
		e := p.match(m)
		if e != nil {
			e.seen = true
			if e.kind == editDelete {
				continue
			}
		}
		if kept > 0 {
			n += m.kStart - o.members[i-1].vEnd
		}
		kept++
		if e == nil {
			n += m.vEnd - m.kStart
		} else {
			n += m.vStart - m.kStart + e.valueLen()
		}
	}
	for i := range p.edits {
		e := &p.edits[i]
		if e.seen || e.kind == editDelete {
			continue
		}
		if kept > 0 {
			n++ // ','
		}
		kept++
		n += quotedLen(e.key) + 1 + e.valueLen()
	}
	return n
}

func (p *Patch) match(m *member) *edit {
	for i := range p.edits {
		if p.obj.keyIs(m, p.edits[i].key) {
			return &p.edits[i]
		}
	}
	return nil
}

func (e *edit) valueLen() int {
	switch e.kind {
	case editRaw:
		return len(e.raw)
	case editString:
		return quotedLen(e.str)
	case editInt:
		return intLen(int64(e.num))
	case editUint:
		return uintLen(e.num)
	case editBool:
		if e.num == 1 {
			return 4
		}
		return 5
	case editNull:
		return 4
	case editSub:
		return e.sub.Len()
	}
	return 0
}

func (e *edit) appendValue(dst []byte) []byte {
	switch e.kind {
	case editRaw:
		return append(dst, e.raw...)
	case editString:
		return AppendString(dst, e.str)
	case editInt:
		return strconv.AppendInt(dst, int64(e.num), 10)
	case editUint:
		return strconv.AppendUint(dst, e.num, 10)
	case editBool:
		if e.num == 1 {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case editNull:
		return append(dst, "null"...)
	case editSub:
		return e.sub.AppendTo(dst)
	}
	return dst
}

func uintLen(v uint64) int {
	n := 1
	for v >= 10 {
		v /= 10
		n++
	}
	return n
}

func intLen(v int64) int {
	if v < 0 {
		if v == -v { // math.MinInt64
			return 20
		}
		return 1 + uintLen(uint64(-v))
	}
	return uintLen(uint64(v))
}

// Bytes renders the patched document into a new slice of exactly Len bytes (one
// allocation). Without edits it returns the source itself (not a copy).
func (p *Patch) Bytes() []byte {
	if len(p.edits) == 0 {
		return p.obj.src
	}
	return p.AppendTo(make([]byte, 0, p.Len()))
}

// AppendTo appends the patched document to dst and returns the extended slice.
func (p *Patch) AppendTo(dst []byte) []byte {
	o := p.obj
	if len(p.edits) == 0 {
		return append(dst, o.src...)
	}
	for i := range p.edits {
		p.edits[i].seen = false
	}
	var tailFrom int // where the source tail (whitespace, '}', trailing whitespace) starts
	if len(o.members) == 0 {
		dst = append(dst, o.src[:o.close]...)
		tailFrom = o.close
	} else {
		dst = append(dst, o.src[:o.members[0].kStart]...)
		tailFrom = o.members[len(o.members)-1].vEnd
	}
	kept := 0
	for i := range o.members {
		m := &o.members[i]
		e := p.match(m)
		if e != nil {
			e.seen = true
			if e.kind == editDelete {
				continue
			}
		}
		if kept > 0 {
			dst = append(dst, o.src[o.members[i-1].vEnd:m.kStart]...)
		}
		kept++
		if e == nil {
			dst = append(dst, o.src[m.kStart:m.vEnd]...)
			continue
		}
		dst = append(dst, o.src[m.kStart:m.vStart]...)
		dst = e.appendValue(dst)
	}
	for i := range p.edits {
		e := &p.edits[i]
		if e.seen || e.kind == editDelete {
			continue
		}
		if kept > 0 {
			dst = append(dst, ',')
		}
		kept++
		dst = AppendString(dst, e.key)
		dst = append(dst, ':')
		dst = e.appendValue(dst)
	}
	return append(dst, o.src[tailFrom:]...)
}
