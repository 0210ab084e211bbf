package httpauth_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/smg-go/smg/adapters/httpauth"
)

func TestKeyAllows(t *testing.T) {
	t.Parallel()
	k := httpauth.NewKey("s3cret")
	assert.True(t, k.Enabled())
	for header, want := range map[string]bool{
		"Bearer s3cret":  true,
		"bearer s3cret":  true,
		"BEARER  s3cret": true,
		"Bearer s3cre":   false,
		"Bearer s3cretx": false,
		"Basic s3cret":   false,
		"s3cret":         false,
		"Bearer ":        false,
		"":               false,
	} {
		assert.Equal(t, want, k.Allows(header), "%q", header)
	}
	open := httpauth.NewKey("")
	assert.False(t, open.Enabled())
	assert.True(t, open.Allows(""), "no key configured: open")
}
