//go:build !race

package jsonbody_test

// raceEnabled: see race_on_test.go.
const raceEnabled = false
