package sim

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/smg-go/smg/domain/text"
)

// tokenizer turns a text prompt into token ids.
type tokenizer func(s string) []int32

// standIn is the simulator's deterministic stand-in tokenizer (see text.go): one id per
// whitespace-separated word, so a prompt that extends another (at a word boundary) shares
// its leading ids and the count is stable.
func standIn(s string) []int32 { return tokenize(s, nil) }

// loadTokenizer returns the tokenizer of Config.TokenizerPath: the HuggingFace
// tokenizer.json in that directory, parsed by the gateway's own loader (domain/text), with
// no special tokens added (the chat rendering is the simulator's own). "" gives the
// stand-in. Errors name the file.
func loadTokenizer(dir string) (tokenizer, error) {
	if dir == "" {
		return standIn, nil
	}
	p := filepath.Join(dir, "tokenizer.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("sim: tokenizer path: %w", err)
	}
	t, err := text.Parse(b)
	if err != nil {
		return nil, fmt.Errorf("sim: tokenizer %s: %w", p, err)
	}
	return func(s string) []int32 {
		ids := t.Encode(s, false)
		out := make([]int32, len(ids))
		for i, id := range ids {
			out[i] = int32(id)
		}
		return out
	}, nil
}
