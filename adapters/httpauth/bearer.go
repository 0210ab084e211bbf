// Package httpauth checks the gateway's own API keys: `Authorization: Bearer <key>`
// (RFC 6750 §2.1), compared in constant time. It never logs or returns the key.
package httpauth

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"
)

// Challenge is the WWW-Authenticate value sent with a 401 (RFC 6750 §3).
const Challenge = `Bearer realm="smg"`

// Key is an expected API key, kept as its SHA-256 digest so that every comparison takes
// the same time whatever the presented key's length or content.
type Key struct {
	set    bool
	digest [sha256.Size]byte
}

// NewKey returns the Key for key; "" gives a Key that is not set (Enabled false: the
// routes it guards are open).
func NewKey(key string) Key {
	if key == "" {
		return Key{}
	}
	return Key{set: true, digest: sha256.Sum256([]byte(key))}
}

// Enabled reports whether a key is required.
func (k Key) Enabled() bool { return k.set }

// Allows reports whether authorization (an Authorization header value) presents the key
// as a Bearer token. The scheme is case-insensitive; the token is compared in constant
// time (crypto/subtle over SHA-256 digests). A Key that is not set allows everything.
func (k Key) Allows(authorization string) bool {
	if !k.set {
		return true
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(authorization), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		// Still hash something, so a missing header costs what a wrong one does.
		token = ""
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(got[:], k.digest[:]) == 1 && ok && strings.EqualFold(scheme, "Bearer")
}
