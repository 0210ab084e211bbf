package text_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/domain/text/texttest"
)

// One tokenizer and one template serve every request of a model at once (run with -race).
func TestSharedTokenizerAndTemplateAreSafeConcurrently(t *testing.T) {
	t.Parallel()
	tok := texttest.Tokenizer(t, texttest.Qwen3)
	ct := chatTemplates(t)[texttest.Qwen3]
	in := chatRequests(t)["parallel_tool_calls"].input()
	want, err := ct.Render(in)
	assert.NoError(t, err)
	wantIDs := tok.Encode(want, false)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				got, err := ct.Render(in)
				assert.NoError(t, err)
				assert.Equal(t, want, got)
				assert.Equal(t, wantIDs, tok.Encode(got, false))
			}
		}()
	}
	wg.Wait()
}
