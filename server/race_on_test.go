//go:build race

package server_test

// raceEnabled reports that the race detector is on: the property tests then run fewer turns
// (the detector slows tokenization about ten-fold).
const raceEnabled = true
