//go:build race

package http

// raceEnabled: the race detector is on, and sync.Pool drops what it is
// given at random, so allocations are not counted.
const raceEnabled = true
