//go:build !race

package jinja

// claimAlign: an output may claim an arena's end at any offset (see race_on.go).
const claimAlign = 1
