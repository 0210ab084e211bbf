package media_test

import (
	"testing"

	"github.com/smg-go/smg/domain/media"
	"github.com/stretchr/testify/require"
)

const (
	visionStart = 151652
	visionEnd   = 151653
	imagePad    = 151655
)

func TestExpandPlaceholders(t *testing.T) {
	ids := []uint32{1, visionStart, imagePad, visionEnd, 2, visionStart, imagePad, visionEnd, 3}
	items := []media.Item{{Tokens: 4}, {Tokens: 6}}
	out, places, err := media.ExpandPlaceholders(ids, imagePad, items)
	require.NoError(t, err)
	require.Equal(t, []media.Placeholder{{Offset: 2, Length: 4}, {Offset: 9, Length: 6}}, places)
	want := []uint32{1, visionStart, imagePad, imagePad, imagePad, imagePad, visionEnd, 2, visionStart}
	for i := 0; i < 6; i++ {
		want = append(want, imagePad)
	}
	want = append(want, visionEnd, 3)
	require.Equal(t, want, out)
	require.Len(t, ids, 9, "input untouched")
}

func TestExpandPlaceholdersCountMismatch(t *testing.T) {
	ids := []uint32{visionStart, imagePad, visionEnd}
	_, _, err := media.ExpandPlaceholders(ids, imagePad, []media.Item{{Tokens: 4}, {Tokens: 4}})
	require.Error(t, err)
	_, _, err = media.ExpandPlaceholders(append(ids, imagePad), imagePad, []media.Item{{Tokens: 4}})
	require.Error(t, err)
	_, _, err = media.ExpandPlaceholders(ids, imagePad, []media.Item{{Tokens: 0}})
	require.Error(t, err)
}

func TestGridBytesAndHashes(t *testing.T) {
	items := []media.Item{{Hash: "a", GridTHW: [3]int64{1, 4, 6}}, {Hash: "b", GridTHW: [3]int64{1, 2, 2}}}
	b := media.GridBytes(items)
	require.Len(t, b, 48)
	require.Equal(t, byte(6), b[16])
	require.Equal(t, byte(2), b[40])
	require.Equal(t, []string{"a", "b"}, media.Hashes(items))
}
