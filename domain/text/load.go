package text

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrUnsupportedTokenizer is wrapped by every error for a tokenizer.json this package cannot
// encode exactly (SentencePiece/Metaspace, WordPiece, Unigram, unknown normalisers). The
// message names the model type and the part that is not supported.
var ErrUnsupportedTokenizer = errors.New("unsupported tokenizer")

type tokenizerJSON struct {
	AddedTokens   []addedTokenJSON `json:"added_tokens"`
	Normalizer    json.RawMessage  `json:"normalizer"`
	PreTokenizer  json.RawMessage  `json:"pre_tokenizer"`
	PostProcessor json.RawMessage  `json:"post_processor"`
	Decoder       json.RawMessage  `json:"decoder"`
	Model         struct {
		Type         string          `json:"type"`
		Vocab        json.RawMessage `json:"vocab"`
		Merges       json.RawMessage `json:"merges"`
		IgnoreMerges bool            `json:"ignore_merges"`
		ByteFallback bool            `json:"byte_fallback"`
	} `json:"model"`
}

type addedTokenJSON struct {
	ID      uint32 `json:"id"`
	Content string `json:"content"`
	Special bool   `json:"special"`
	LStrip  bool   `json:"lstrip"`
	RStrip  bool   `json:"rstrip"`
}

type component struct {
	Type          string            `json:"type"`
	Pretokenizers []json.RawMessage `json:"pretokenizers"`
	Normalizers   []json.RawMessage `json:"normalizers"`
	Processors    []json.RawMessage `json:"processors"`
	Decoders      []json.RawMessage `json:"decoders"`
	Pattern       struct {
		Regex  string `json:"Regex"`
		String string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       bool   `json:"use_regex"`
	Single         []struct {
		SpecialToken *struct {
			ID string `json:"id"`
		} `json:"SpecialToken"`
		Sequence *struct{} `json:"Sequence"`
	} `json:"single"`
	SpecialTokens map[string]struct {
		IDs []uint32 `json:"ids"`
	} `json:"special_tokens"`
}

func unsupported(format string, args ...any) error {
	return fmt.Errorf("text: %w: %s", ErrUnsupportedTokenizer, fmt.Sprintf(format, args...))
}

// Parse builds a Tokenizer from the bytes of a HuggingFace tokenizer.json. Supported: model
// "BPE" over the GPT-2 byte-level alphabet with a Split(Regex, Isolated) + ByteLevel
// pre-tokenizer (Qwen2/2.5/3, Llama-3.x), an NFC or absent normaliser, ByteLevel or
// TemplateProcessing post-processors; and SentencePiece-style BPE with byte fallback
// (Prepend/Replace "▁" normaliser, no pre-tokenizer: Llama-2, Mistral-7B-v0.1; spm.go). Anything else fails with ErrUnsupportedTokenizer naming
// what is unsupported; malformed JSON fails with the decoder's error.
func Parse(data []byte) (*Tokenizer, error) {
	var tj tokenizerJSON
	if err := json.Unmarshal(data, &tj); err != nil {
		return nil, fmt.Errorf("text: tokenizer.json: %w", err)
	}
	m := &tj.Model
	if m.Type == "" && len(m.Merges) > 0 {
		m.Type = "BPE"
	}
	if m.Type != "BPE" {
		return nil, unsupported("model type %q (only byte-level BPE tokenizer.json is supported)", m.Type)
	}
	var vocab map[string]uint32
	if err := json.Unmarshal(m.Vocab, &vocab); err != nil {
		return nil, fmt.Errorf("text: tokenizer.json model.vocab: %w", err)
	}
	if m.ByteFallback {
		return parseSPM(&tj, vocab)
	}
	t := &Tokenizer{vocab: make(map[string]uint32, len(vocab)), ignoreMerges: m.IgnoreMerges}
	if err := t.setNormalizer(tj.Normalizer); err != nil {
		return nil, err
	}
	if err := t.setPreTokenizer(tj.PreTokenizer); err != nil {
		return nil, err
	}
	if err := t.setPostProcessor(tj.PostProcessor); err != nil {
		return nil, err
	}
	maxID := uint32(0)
	for s, id := range vocab {
		b, ok := byteLevelToBytes(s)
		if !ok {
			return nil, unsupported("model type BPE whose vocabulary is not in the byte-level alphabet (token %q)", s)
		}
		t.vocab[string(b)] = id
		maxID = max(maxID, id)
	}
	for _, a := range tj.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	t.idBytes = make([]string, maxID+1)
	t.known = make([]bool, maxID+1)
	t.special = make([]bool, maxID+1)
	for b, id := range t.vocab {
		t.idBytes[id], t.known[id] = b, true
	}
	for b := 0; b < 256; b++ {
		id, ok := t.vocab[string([]byte{byte(b)})]
		if !ok {
			return nil, unsupported("byte-level vocabulary without a token for byte 0x%02x", b)
		}
		t.byteID[b] = id
	}
	if err := t.setMerges(m.Merges, vocab); err != nil {
		return nil, err
	}
	t.added = newAddedMatcher(tj.AddedTokens)
	t.addedIDs = make(map[string]uint32, len(tj.AddedTokens))
	for _, a := range tj.AddedTokens {
		t.idBytes[a.ID], t.known[a.ID], t.special[a.ID] = a.Content, true, a.Special
		t.addedIDs[a.Content] = a.ID
	}
	if err := t.resolvePostNames(); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tokenizer) resolvePostNames() error {
	for _, name := range t.postNames {
		id, ok := t.addedIDs[name]
		if !ok {
			id, ok = t.vocab[name]
		}
		if !ok {
			return fmt.Errorf("text: post-processor token %q is not in the vocabulary", name)
		}
		t.prefix = append(t.prefix, id)
	}
	return nil
}

// setMerges reads model.merges, either ["a b", ...] or [["a", "b"], ...] (newer files), into
// rank-ordered merge rules keyed by the pair's ids.
func (t *Tokenizer) setMerges(raw json.RawMessage, vocab map[string]uint32) error {
	var pairs [][2]string
	var strs []string
	if err := json.Unmarshal(raw, &strs); err != nil {
		strs = nil
		if err2 := json.Unmarshal(raw, &pairs); err2 != nil {
			return fmt.Errorf("text: model.merges is neither [\"a b\"] nor [[\"a\",\"b\"]]: %w", err)
		}
	}
	n := len(strs) + len(pairs)
	t.merges = make(map[uint64]merge, n)
	for rank := 0; rank < n; rank++ {
		var a, b string
		if strs != nil {
			var ok bool
			if a, b, ok = strings.Cut(strs[rank], " "); !ok {
				return fmt.Errorf("text: merge %d %q is not a pair", rank, strs[rank])
			}
		} else {
			a, b = pairs[rank][0], pairs[rank][1]
		}
		ia, oka := vocab[a]
		ib, okb := vocab[b]
		im, okm := vocab[a+b]
		if !oka || !okb || !okm {
			return fmt.Errorf("text: merge %d (%q, %q) refers to tokens missing from the vocabulary", rank, a, b)
		}
		k := mergeKey(ia, ib)
		if _, dup := t.merges[k]; !dup {
			t.merges[k] = merge{rank: uint32(rank), id: im}
		}
	}
	return nil
}

func (t *Tokenizer) setNormalizer(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("text: normalizer: %w", err)
	}
	switch c.Type {
	case "NFC":
		t.nfc = true
		return nil
	case "Sequence":
		for _, n := range c.Normalizers {
			if err := t.setNormalizer(n); err != nil {
				return err
			}
		}
		return nil
	}
	return unsupported("normalizer %q (only NFC is supported; Prepend/Replace belong to SentencePiece-style models)", c.Type)
}

func (t *Tokenizer) setPreTokenizer(raw json.RawMessage) error {
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("text: pre_tokenizer: %w", err)
	}
	parts := []json.RawMessage{raw}
	if c.Type == "Sequence" {
		parts = c.Pretokenizers
	}
	sawByteLevel := false
	for _, p := range parts {
		var pc component
		if err := json.Unmarshal(p, &pc); err != nil {
			return fmt.Errorf("text: pre_tokenizer: %w", err)
		}
		switch pc.Type {
		case "Split":
			if t.split != nil || pc.Pattern.Regex == "" || pc.Behavior != "Isolated" || pc.Invert {
				return unsupported("pre_tokenizer Split other than one Regex with behavior Isolated")
			}
			sp, err := newSplitter(pc.Pattern.Regex)
			if err != nil {
				return err
			}
			t.split = sp
		case "ByteLevel":
			if pc.AddPrefixSpace || pc.UseRegex && t.split != nil {
				return unsupported("pre_tokenizer ByteLevel with add_prefix_space or its own regex after a Split")
			}
			if pc.UseRegex && t.split == nil {
				// GPT-2's own regex, which ByteLevel applies when it stands alone.
				sp, err := newSplitter(`'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`)
				if err != nil {
					return err
				}
				t.split = sp
			}
			sawByteLevel = true
		default:
			return unsupported("pre_tokenizer %q (Metaspace is SentencePiece-style)", pc.Type)
		}
	}
	if !sawByteLevel {
		return unsupported("pre_tokenizer without ByteLevel")
	}
	if t.split == nil {
		t.split = func(s string, emit func(int, int)) { emit(0, len(s)) }
	}
	return nil
}

func (t *Tokenizer) setPostProcessor(raw json.RawMessage) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var c component
	if err := json.Unmarshal(raw, &c); err != nil {
		return fmt.Errorf("text: post_processor: %w", err)
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for _, p := range c.Processors {
			if err := t.setPostProcessor(p); err != nil {
				return err
			}
		}
		return nil
	case "TemplateProcessing":
		seen := false
		for _, s := range c.Single {
			switch {
			case s.Sequence != nil:
				seen = true
			case s.SpecialToken != nil && !seen:
				t.postNames = append(t.postNames, s.SpecialToken.ID)
			case s.SpecialToken != nil:
				return unsupported("post_processor TemplateProcessing with special tokens after the sequence")
			}
		}
		return nil
	}
	return unsupported("post_processor %q", c.Type)
}
