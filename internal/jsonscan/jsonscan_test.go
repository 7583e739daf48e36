package jsonscan

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// TestWordScans checks the eight-bytes-at-a-time scans against byte loops, with the byte of
// interest at every position of a word and bytes that trip the word tricks (0x01, 0x21, 0x80…)
// around it.
func TestWordScans(t *testing.T) {
	t.Parallel()
	fill := []byte{'a', 0x01, 0x1f, 0x20, 0x21, '"' + 1, '\\' + 1, 0x7f, 0x80, 0xa2, 0xdc, 0xff}
	special := []byte{'"', '\\', 0x00, 0x1f, 0x0a}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 20000 {
		b := make([]byte, rng.IntN(24))
		for i := range b {
			b[i] = fill[rng.IntN(len(fill))]
		}
		if len(b) > 0 && rng.IntN(4) > 0 {
			b[rng.IntN(len(b))] = special[rng.IntN(len(special))]
		}
		start := rng.IntN(len(b) + 1)
		if got, want := NextStringSpecial(b, start), naiveIndex(b, start, true); got != want {
			t.Fatalf("NextStringSpecial(% x, %d) = %d, want %d", b, start, got, want)
		}
		if got, want := NextQuoteOrBackslash(b, start), naiveIndex(b, start, false); got != want {
			t.Fatalf("NextQuoteOrBackslash(% x, %d) = %d, want %d", b, start, got, want)
		}
	}
	// Every word with one special byte among fill bytes.
	for _, s := range special {
		for pos := range 8 {
			for _, f := range fill {
				var b [8]byte
				for i := range b {
					b[i] = f
				}
				b[pos] = s
				if m := EqMask(binary.LittleEndian.Uint64(b[:]), '"') | EqMask(binary.LittleEndian.Uint64(b[:]), '\\') |
					ltMask(binary.LittleEndian.Uint64(b[:]), ' '); m == 0 {
					t.Fatalf("no mask bit for % x", b)
				}
			}
		}
	}
}

func naiveIndex(b []byte, i int, controls bool) int {
	for ; i < len(b); i++ {
		if b[i] == '"' || b[i] == '\\' || controls && b[i] < ' ' {
			return i
		}
	}
	return len(b)
}
