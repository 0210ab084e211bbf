package text

// GPT-2 byte-level alphabet (HF tokenizers pre_tokenizers::byte_level::bytes_char): every byte
// maps to one printable rune, so that vocabulary strings can hold arbitrary bytes. The
// printable Latin-1 bytes map to themselves; the other 68 map to U+0100.. in byte order.

// byteToRune maps a raw byte to its byte-level rune.
var byteToRune [256]rune

// runeToByte maps a byte-level rune back to its byte; ok is false for runes outside the alphabet.
var runeToByte = map[rune]byte{}

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelToBytes turns a vocabulary string in the byte-level alphabet into raw bytes. ok is
// false when the string holds a rune outside the alphabet (not a byte-level vocabulary).
func byteLevelToBytes(s string) (out []byte, ok bool) {
	out = make([]byte, 0, len(s))
	for _, r := range s {
		b, found := runeToByte[r]
		if !found {
			return nil, false
		}
		out = append(out, b)
	}
	return out, true
}
