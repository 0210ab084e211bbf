package text

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// SentencePiece-style BPE in tokenizer.json (Llama-2, Mistral-7B-v0.1 and their kin): the
// normaliser prepends "▁" to every text segment and turns spaces into "▁", there is no
// pre-tokenizer (a segment is one word), merges run over characters, a character missing from
// the vocabulary falls back to its UTF-8 bytes as <0xXX> tokens, and decoding turns "▁" back
// into spaces, byte tokens into bytes, and strips one leading space.

const spmSpace = "▁"

// parseSPM builds the SentencePiece-style tokenizer; only the exact normaliser/decoder chain
// above is accepted, anything else is ErrUnsupportedTokenizer.
func parseSPM(tj *tokenizerJSON, vocab map[string]uint32) (*Tokenizer, error) {
	if !isSPMNormalizer(tj.Normalizer) || !(len(tj.PreTokenizer) == 0 || string(tj.PreTokenizer) == "null") {
		return nil, unsupported("model type BPE with byte_fallback other than Prepend(▁)+Replace(' ', ▁) and no pre-tokenizer (SentencePiece-style Metaspace variants)")
	}
	t := &Tokenizer{spm: true, vocab: vocab}
	if err := t.setPostProcessor(tj.PostProcessor); err != nil {
		return nil, err
	}
	maxID := uint32(0)
	for _, id := range vocab {
		maxID = max(maxID, id)
	}
	for _, a := range tj.AddedTokens {
		maxID = max(maxID, a.ID)
	}
	t.idBytes = make([]string, maxID+1)
	t.known = make([]bool, maxID+1)
	t.special = make([]bool, maxID+1)
	haveBytes := 0
	for s, id := range vocab {
		t.known[id] = true
		if len(s) == 6 && strings.HasPrefix(s, "<0x") && s[5] == '>' {
			if b, err := strconv.ParseUint(s[3:5], 16, 8); err == nil {
				t.idBytes[id] = string([]byte{byte(b)})
				t.byteID[b] = id
				haveBytes++
				continue
			}
		}
		t.idBytes[id] = strings.ReplaceAll(s, spmSpace, " ")
	}
	if haveBytes != 256 {
		return nil, unsupported("SentencePiece-style BPE with byte_fallback but %d of the 256 <0xXX> byte tokens", haveBytes)
	}
	if err := t.setMerges(tj.Model.Merges, vocab); err != nil {
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

func isSPMNormalizer(raw json.RawMessage) bool {
	var seq struct {
		Type        string `json:"type"`
		Normalizers []struct {
			Type    string `json:"type"`
			Prepend string `json:"prepend"`
			Pattern struct {
				String string `json:"String"`
			} `json:"pattern"`
			Content string `json:"content"`
		} `json:"normalizers"`
	}
	if json.Unmarshal(raw, &seq) != nil || seq.Type != "Sequence" || len(seq.Normalizers) != 2 {
		return false
	}
	p, r := seq.Normalizers[0], seq.Normalizers[1]
	return p.Type == "Prepend" && p.Prepend == spmSpace && r.Type == "Replace" && r.Pattern.String == " " && r.Content == spmSpace
}

// encodeSPM appends the ids of one text segment (no added tokens inside).
func (t *Tokenizer) encodeSPM(s string, out []uint32) []uint32 {
	if s == "" {
		return out
	}
	normalized := spmSpace + strings.ReplaceAll(s, " ", spmSpace)
	syms := make([]uint32, 0, len(normalized))
	for _, r := range normalized {
		if id, ok := t.vocab[string(r)]; ok {
			syms = append(syms, id)
			continue
		}
		var buf [utf8.UTFMax]byte
		for _, b := range buf[:utf8.EncodeRune(buf[:], r)] {
			syms = append(syms, t.byteID[b])
		}
	}
	return t.merge(syms, out)
}
