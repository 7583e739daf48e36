//go:build race

package prepare_test

// raceEnabled reports that the race detector is on: the property tests then run fewer turns
// (the detector slows tokenization about ten-fold).
const raceEnabled = true
