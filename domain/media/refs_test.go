package media_test

import (
	"testing"

	"github.com/smg-go/smg/domain/media"
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
