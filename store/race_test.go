//go:build race

package store_test

// raceEnabled shrinks the heaviest loops under the race detector (10x slower).
const raceEnabled = true
