package sim

import (
	"strings"
)

// The simulator's "model": a whitespace tokenizer, a 64-bit prompt digest and a seeded
// generator. Everything is deterministic so tests can predict the exact text.
//
// A prompt string is split on ASCII whitespace; each word becomes one token id in
// [tokenBase, tokenBase+tokenSpan). input_ids prompts are used as given. The digest is
// FNV-1a over the token ids (4 bytes each, little endian). A decode that received the KV
// through a handoff seeds its generator from the digest the *prefill* computed
// (handoffSeed); an instance that computed the prompt itself seeds from its own digest with
// a different salt (localSeed). So the two texts differ, and a handoff text reveals which
// prompt the prefill actually saw.

const (
	tokenBase = 100
	tokenSpan = 31900

	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211

	handoffSalt = 0x4b565f48414e444f // "KV_HANDO"
	localSalt   = 0x4c4f43414c5f5f5f // "LOCAL___"
)

// syllables build the 4,096-word vocabulary: a token id maps to " " + two syllables.
var syllables = [64]string{
	"ba", "be", "bi", "bo", "bu", "da", "de", "di", "do", "du", "fa", "fe", "fi", "fo", "fu", "ga",
	"ge", "gi", "go", "gu", "ka", "ke", "ki", "ko", "ku", "la", "le", "li", "lo", "lu", "ma", "me",
	"mi", "mo", "mu", "na", "ne", "ni", "no", "nu", "pa", "pe", "pi", "po", "pu", "ra", "re", "ri",
	"ro", "ru", "sa", "se", "si", "so", "su", "ta", "te", "ti", "to", "tu", "va", "ve", "vi", "vo",
}

// Message is one chat turn as the simulator renders it into a prompt (see [ChatPrompt]).
type Message struct {
	Role    string
	Content string
}

// ChatPrompt renders chat turns the way the simulator does for /v1/chat/completions,
// /v1/messages (system first) and /v1/responses (instructions as "system", a string input as
// "user"): "<role>: <content>\n" per turn. Array content is the concatenation of its text
// parts. Pass the result to [HandoffText] or [RecomputeText].
func ChatPrompt(msgs ...Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Role)
		b.WriteString(": ")
		b.WriteString(m.Content)
		b.WriteByte('\n')
	}
	return b.String()
}

// HandoffText is the text a decode instance generates for a text prompt whose KV arrived
// through a real handoff (SGLang bootstrap room, vLLM NIXL pull or Mooncake fetch), with
// maxTokens output tokens. Its first word is also the one token a SGLang prefill returns
// (HandoffText(prompt, 1)). For chat-style routes build prompt with [ChatPrompt].
func HandoffText(prompt string, maxTokens int) string {
	return genText(handoffSeed(digestIDs(tokenize(prompt, nil))), maxTokens)
}

// RecomputeText is the text an instance generates when it computed the prompt itself: a
// vLLM decode without (valid) kv_transfer_params, which counts in recomputed_prompts, or any
// non-handoff request. It differs from [HandoffText] for the same prompt.
func RecomputeText(prompt string, maxTokens int) string {
	return genText(localSeed(digestIDs(tokenize(prompt, nil))), maxTokens)
}

// HandoffTextIDs is [HandoffText] for an input_ids prompt (SGLang /generate, or a
// /v1/completions prompt given as token ids).
func HandoffTextIDs(ids []int, maxTokens int) string {
	return genText(handoffSeed(digestIDs(intsToIDs(ids))), maxTokens)
}

// RecomputeTextIDs is [RecomputeText] for an input_ids prompt.
func RecomputeTextIDs(ids []int, maxTokens int) string {
	return genText(localSeed(digestIDs(intsToIDs(ids))), maxTokens)
}

// PromptTokens returns how many tokens the simulator counts for a text prompt (its number of
// whitespace-separated words); usage.prompt_tokens reports this number.
func PromptTokens(prompt string) int { return len(tokenize(prompt, nil)) }

func intsToIDs(ids []int) []int32 {
	out := make([]int32, len(ids))
	for i, v := range ids {
		out[i] = int32(v)
	}
	return out
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// tokenize appends the token ids of s to dst.
func tokenize(s string, dst []int32) []int32 {
	i := 0
	for i < len(s) {
		for i < len(s) && isSpace(s[i]) {
			i++
		}
		if i >= len(s) {
			break
		}
		h := uint32(2166136261)
		for i < len(s) && !isSpace(s[i]) {
			h ^= uint32(s[i])
			h *= 16777619
			i++
		}
		dst = append(dst, int32(tokenBase+h%tokenSpan))
	}
	return dst
}

func digestIDs(ids []int32) uint64 {
	h := uint64(fnvOffset)
	for _, id := range ids {
		u := uint32(id)
		for k := 0; k < 4; k++ {
			h ^= uint64(byte(u >> (8 * k)))
			h *= fnvPrime
		}
	}
	return h
}

func splitmix(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

func handoffSeed(digest uint64) uint64 { return splitmix(digest ^ handoffSalt) }
func localSeed(digest uint64) uint64   { return splitmix(digest ^ localSalt) }

// tokenAt is the i-th output token id of a generator seeded with seed.
func tokenAt(seed uint64, i int) int32 {
	return int32(tokenBase + splitmix(seed+uint64(i)*0x9e3779b97f4a7c15)%tokenSpan)
}

// appendWord appends the text of token id to b.
func appendWord(b []byte, id int32) []byte {
	u := uint32(id)
	b = append(b, ' ')
	b = append(b, syllables[u%64]...)
	return append(b, syllables[(u/64)%64]...)
}

// wordOf is the text of one token.
func wordOf(id int32) string { return string(appendWord(make([]byte, 0, 5), id)) }

func genText(seed uint64, n int) string {
	b := make([]byte, 0, 5*n)
	for i := 0; i < n; i++ {
		b = appendWord(b, tokenAt(seed, i))
	}
	return string(b)
}

// logprobOf is the deterministic log-probability the simulator reports for a token id.
func logprobOf(id int32) float64 { return -float64(uint32(id)%1000) / 997.0 }
