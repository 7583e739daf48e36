// Package jsonscan finds the bytes that end a run of plain JSON string bytes eight bytes at a time
// (SWAR word tricks), for the hand-written JSON scanners of render, stream and server.
package jsonscan

import (
	"encoding/binary"
	"math/bits"
)

// The scans below read eight bytes at a time and find the first byte of interest with
// the "has zero byte" / "has byte less than n" word tricks. Their masks can flag a byte above
// (after) a true match spuriously, never one below it, so the lowest flagged byte is exact. Tool
// outputs have an escape every few bytes, so finding its position in the word matters more than
// skipping long runs (which bytes.IndexByte would do faster, at a higher cost per call).

const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// EqMask flags the bytes of w equal to c.
func EqMask(w uint64, c byte) uint64 {
	x := w ^ lowBits*uint64(c)
	return (x - lowBits) &^ x & highBits
}

// ltMask flags the bytes of w below n (n <= 0x80).
func ltMask(w uint64, n byte) uint64 {
	return (w - lowBits*uint64(n)) &^ w & highBits
}

// NextQuoteOrBackslash returns the index of the first '"' or '\\' in b at or after i, or len(b).
func NextQuoteOrBackslash(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := EqMask(w, '"') | EqMask(w, '\\'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b) && b[i] != '"' && b[i] != '\\'; i++ {
	}
	return i
}

// NextStringSpecial returns the index of the first byte at or after i that ends a run of plain
// string bytes: '"', '\\' or a control character (invalid in a string); len(b) if none.
func NextStringSpecial(b []byte, i int) int {
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := EqMask(w, '"') | EqMask(w, '\\') | ltMask(w, ' '); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= ' '; i++ {
	}
	return i
}
