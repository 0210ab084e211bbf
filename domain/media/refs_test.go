package media_test

import (
	"strings"
	"testing"

	"github.com/smg-go/smg/domain/media"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestChatRefs(t *testing.T) {
	refs, err := media.ChatRefs([]byte(`[
		{"role":"system","content":"be brief"},
		{"role":"user","content":[{"type":"text","text":"compare"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,AAA"}},
			{"type":"image_url","image_url":"http://127.0.0.1/b.png"}]},
		{"role":"user","content":[{"type":"image","image":"http://127.0.0.1/c.png"}]}]`))
	require.NoError(t, err)
	require.Equal(t, []media.Ref{{Modality: "image", URL: "data:image/png;base64,AAA"},
		{Modality: "image", URL: "http://127.0.0.1/b.png"}, {Modality: "image", URL: "http://127.0.0.1/c.png"}}, refs)

	refs, err = media.ChatRefs([]byte(`[{"role":"user","content":"hi"}]`))
	require.NoError(t, err)
	require.Empty(t, refs)

	_, err = media.ChatRefs([]byte(`[{"role":"user","content":[{"type":"image_url","image_url":{}}]}]`))
	require.Error(t, err)
	_, err = media.ChatRefs([]byte(`{"role":"user"}`))
	require.Error(t, err)
}

func TestChatRefsNamesTheMalformedMessageAndCopiesAURLOnce(t *testing.T) {
	_, err := media.ChatRefs([]byte(`[{"role":"user","content":"hi"},{"role":"user","content":[1]}]`))
	require.ErrorContains(t, err, "messages[1].content")
	refs, err := media.ChatRefs([]byte(`[{"role":"user","content":[{"type":"image_url","image_url":5},{"type":"image","image":{"url":"u"}}]}]`))
	require.ErrorContains(t, err, "messages[0].content[0]: the image_url part has no url")
	require.Nil(t, refs)

	url := "data:image/png;base64," + strings.Repeat("QUJD", 1<<20) // 4 MiB
	msgs := []byte(`[{"role":"user","content":[{"type":"image_url","image_url":{"url":"` + url + `"}}]}]`)
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			refs, err := media.ChatRefs(msgs)
			if err != nil || len(refs) != 1 || refs[0].URL != url {
				b.Fatal(err)
			}
		}
	})
	assert.Less(t, res.AllocedBytesPerOp(), int64(len(url))*3/2, "the URL's string, not the raw content and part as well")
}
