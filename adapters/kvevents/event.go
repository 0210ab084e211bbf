package kvevents

import (
	"errors"
	"fmt"
	"math"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/smg-go/smg/domain/kvevent"
)

// rawEvent collects an event's fields from either wire form before validation.
type rawEvent struct {
	typ       string
	hashes    []uint64
	parent    uint64
	hasParent bool
	tokens    []uint32
	blockSize int64
	loraID    int64
	hasLoraID bool
	medium    string
	loraName  string
	salt      string
	extra     [][]msgpack.RawMessage
	group     int64
}

// field decodes the value of the named field into e; unknown names are skipped.
func (d *decoder) field(e *rawEvent, name string) error {
	var err error
	switch name {
	case "block_hashes":
		e.hashes, err = d.hashes()
	case "parent_block_hash":
		var null bool
		if null, err = d.isNil(); err == nil && !null {
			e.parent, err = d.hash()
			e.hasParent = err == nil
		}
	case "token_ids":
		e.tokens, err = d.tokens()
	case "block_size":
		e.blockSize, err = d.optInt()
	case "lora_id":
		var null bool
		if null, err = d.isNil(); err == nil && !null {
			e.loraID, err = d.int()
			e.hasLoraID = err == nil
		}
	case "medium":
		e.medium, err = d.str()
	case "lora_name":
		e.loraName, err = d.str()
	case "cache_salt":
		e.salt, err = d.str()
	case "extra_keys":
		e.extra, err = d.extraKeys()
	case "group_idx":
		e.group, err = d.optInt()
	default:
		err = d.d.Skip()
	}
	if err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	return nil
}

func (d *decoder) optInt() (int64, error) {
	if null, err := d.isNil(); err != nil || null {
		return 0, err
	}
	return d.int()
}

// Positional field names of the legacy array encoding, after the tag (declaration order of
// vLLM's structs; SGLang's share the first six BlockStored fields, reference §1.5, §2.2).
var (
	storedFields  = []string{"block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx"}
	removedFields = []string{"block_hashes", "medium", "group_idx"}
)

// event decodes one event; ok is false for an event type this gateway does not use.
func (d *decoder) event() (kvevent.Event, bool, error) {
	c, err := d.peek()
	if err != nil {
		return kvevent.Event{}, false, err
	}
	var e rawEvent
	switch {
	case isArray(c):
		n, err := d.arrayLen()
		if err != nil {
			return kvevent.Event{}, false, err
		}
		if n < 1 {
			return kvevent.Event{}, false, errors.New("empty event array")
		}
		if e.typ, err = d.d.DecodeString(); err != nil {
			return kvevent.Event{}, false, fmt.Errorf("tag: %v", err)
		}
		var names []string
		switch e.typ {
		case "BlockStored":
			names = storedFields
		case "BlockRemoved":
			names = removedFields
		}
		for i := 1; i < n; i++ {
			if i-1 >= len(names) {
				if err := d.d.Skip(); err != nil {
					return kvevent.Event{}, false, err
				}
				continue
			}
			name := names[i-1]
			if name == "lora_name" {
				// SGLang salted stores put a metadata map where vLLM has lora_name (§2.2).
				if c, err := d.peek(); err == nil && isMap(c) {
					if err := d.fields(&e); err != nil {
						return kvevent.Event{}, false, fmt.Errorf("metadata: %v", err)
					}
					continue
				}
			}
			if err := d.field(&e, name); err != nil {
				return kvevent.Event{}, false, err
			}
		}
	case isMap(c):
		if err := d.fields(&e); err != nil {
			return kvevent.Event{}, false, err
		}
		if e.typ == "" {
			return kvevent.Event{}, false, errors.New(`event map without "type"`)
		}
	default:
		return kvevent.Event{}, false, fmt.Errorf("event is msgpack code %#x, want array or map", c)
	}
	return e.build()
}

// fields decodes a map of named fields ("type" included) into e.
func (d *decoder) fields(e *rawEvent) error {
	n, err := d.mapLen()
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		k, err := d.d.DecodeString()
		if err != nil {
			return fmt.Errorf("key: %v", err)
		}
		if k == "type" {
			if e.typ, err = d.d.DecodeString(); err != nil {
				return fmt.Errorf("type: %v", err)
			}
			continue
		}
		if err := d.field(e, k); err != nil {
			return err
		}
	}
	return nil
}

func (e *rawEvent) build() (kvevent.Event, bool, error) {
	if e.group < 0 || e.group > math.MaxInt32 {
		return kvevent.Event{}, false, fmt.Errorf("group_idx %d out of range", e.group)
	}
	ev := kvevent.Event{Medium: e.medium, Group: int(e.group)}
	switch e.typ {
	case "AllBlocksCleared":
		ev.Kind = kvevent.Cleared
		return ev, true, nil
	case "BlockRemoved":
		ev.Kind = kvevent.Removed
		ev.Removed = e.hashes
		return ev, true, nil
	case "BlockStored":
	default:
		return kvevent.Event{}, false, nil
	}
	ev.Kind = kvevent.Stored
	ev.Parent, ev.HasParent = e.parent, e.hasParent
	ev.LoRAName, ev.LoRAID, ev.HasLoRAID = e.loraName, e.loraID, e.hasLoraID
	n := len(e.hashes)
	if e.blockSize < 0 || e.blockSize > math.MaxInt32 {
		return kvevent.Event{}, false, fmt.Errorf("block_size %d out of range", e.blockSize)
	}
	bs := int(e.blockSize)
	if bs == 0 && n > 0 && len(e.tokens)%n == 0 {
		bs = len(e.tokens) / n
	}
	ev.BlockSize = bs
	if n == 0 {
		return ev, true, nil
	}
	if bs == 0 || len(e.tokens) > n*bs || len(e.tokens) <= (n-1)*bs {
		return kvevent.Event{}, false, fmt.Errorf("%d token ids do not fill %d blocks of %d", len(e.tokens), n, bs)
	}
	if len(e.extra) != 0 && len(e.extra) != n {
		return kvevent.Event{}, false, fmt.Errorf("%d extra_keys for %d blocks", len(e.extra), n)
	}
	ev.Blocks = make([]kvevent.Block, n)
	for i := range ev.Blocks {
		end := min((i+1)*bs, len(e.tokens))
		ev.Blocks[i] = kvevent.Block{EngineHash: e.hashes[i], Tokens: e.tokens[i*bs : end]}
		if len(e.extra) == n {
			ev.Blocks[i].Extra = fingerprint(e.extra[i], e.loraName)
		}
	}
	if e.salt != "" && !e.hasParent {
		ev.Blocks[0].Extra = mix(ev.Blocks[0].Extra, saltFingerprint(e.salt))
	}
	return ev, true, nil
}

// mix combines two extra-key fingerprints, 0 meaning none.
func mix(a, b uint64) uint64 {
	switch {
	case a == 0:
		return b
	case b == 0:
		return a
	}
	if v := a*0x9E3779B97F4A7C15 ^ b; v != 0 {
		return v
	}
	return 1
}
