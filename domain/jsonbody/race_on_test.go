//go:build race

package jsonbody_test

// raceEnabled: sync.Pool drops items at random under the race detector, so allocation
// counts of pooled paths are not checked then.
const raceEnabled = true
