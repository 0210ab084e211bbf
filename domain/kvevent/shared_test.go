package kvevent_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/smg-go/smg/domain/kvevent"
)

func TestSharedRoundTripsItsFullBlocks(t *testing.T) {
	t.Parallel()
	in := kvevent.Shared{Origin: "gw-1", Worker: "http://p:8000", Model: "m", BlockSize: 4,
		Tokens: []uint32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, Expires: time.UnixMilli(1_700_000_000_123)}
	out, err := kvevent.DecodeShared(kvevent.EncodeShared(in))
	require.NoError(t, err)
	assert.Equal(t, []uint32{1, 2, 3, 4, 5, 6, 7, 8}, out.Tokens, "the partial last block is not sent")
	out.Tokens = in.Tokens
	assert.Equal(t, in, out)
}

func TestDecodeSharedRejectsBadInput(t *testing.T) {
	t.Parallel()
	good := kvevent.EncodeShared(kvevent.Shared{Worker: "w", BlockSize: 2, Tokens: []uint32{1, 2}, Expires: time.Unix(1, 0)})
	for name, b := range map[string][]byte{
		"empty":     nil,
		"version":   append([]byte{9}, good[1:]...),
		"truncated": good[:len(good)-1],
		"trailing":  append(append([]byte{}, good...), 0),
		"huge len":  {1, 0xff, 0xff, 0xff, 0xff, 0x0f},
	} {
		_, err := kvevent.DecodeShared(b)
		assert.ErrorIs(t, err, kvevent.ErrBadShared, name)
	}
}
