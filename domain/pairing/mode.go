// Package pairing decides which prefill worker may hand its KV cache to which decode worker.
//
// Every prefill and decode worker gets a Descriptor (runtime, KV transport, KV layout, engine
// version, explicit pairing protocol) derived from its registration; Compatible applies the
// rules of the --pd-pairing-mode (off, lenient, strict); a Matrix precomputes, for a fleet,
// the compatible decodes of every prefill so that request-time selection only reads it.
//
// Source: the seed (shared/seeds/000_b8ffe1c1d5752e9e.txt), "Prefill/Decode Pairing" ("What
// Is Compared", "Pairing Modes", "Explicit Pairing Protocol"), "Per-Phase Policies", the
// no_compatible_pd_pair row of "Error Codes" and "Troubleshooting". The package is pure: it
// imports only the standard library and domain/*.
package pairing

import (
	"fmt"

	"github.com/smg-go/smg/domain/wire"
)

// Mode is the --pd-pairing-mode: how strictly a prefill and a decode must share a KV transfer
// protocol (seed "Pairing Modes"). The zero value behaves as ModeLenient, the seed's default.
type Mode string

// The pairing modes.
const (
	// ModeOff pairs every prefill with every decode, except that a gRPC leg keeps both legs on
	// one runtime.
	ModeOff Mode = wire.PairingModeOff
	// ModeLenient (default) refuses a pair only when both legs report a runtime, transport or
	// KV layout fact and the values differ.
	ModeLenient Mode = wire.PairingModeLenient
	// ModeStrict refuses, in addition, unknown runtimes or transports, one-sided KV layout
	// facts, one-sided explicit protocols and differing engine versions.
	ModeStrict Mode = wire.PairingModeStrict
)

// ParseMode returns the Mode for a --pd-pairing-mode value. "" gives ModeLenient (the seed's
// default); any other value than off, lenient or strict is an error naming the accepted values.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case "":
		return ModeLenient, nil
	case ModeOff, ModeLenient, ModeStrict:
		return m, nil
	}
	return "", fmt.Errorf("unknown --pd-pairing-mode %q (expected off, lenient or strict)", s)
}

// String returns the flag value; the zero Mode prints as "lenient".
func (m Mode) String() string {
	if m == "" {
		return string(ModeLenient)
	}
	return string(m)
}
