package bpe

import (
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizeNFC returns s in NFC as the Rust tokenizers crate computes it.
//
// The crate's normalization data is Unicode 9.0: a code point assigned later has no decomposition,
// no composition and combining class 0 there, so it acts as a starter that nothing crosses. x/text
// has newer data (where such a code point may be a combining mark), so s is cut at every code point
// unassigned in Unicode 9.0 and each piece is normalized on its own, which gives exactly the crate's
// result (checked against the oracle over every code point and random sequences, normalize_test.go).
// Normalized input (all of ASCII, typically) is returned as is, without allocating.
func normalizeNFC(s string) string {
	i := 0
	for i < len(s) && s[i] < utf8.RuneSelf {
		i++
	}
	if i == len(s) {
		return s
	}
	cut := -1 // first code point unassigned in Unicode 9.0
	for j, r := range s[i:] {
		if r >= utf8.RuneSelf && propsOf(r)&propNew != 0 {
			cut = i + j
			break
		}
	}
	if cut < 0 {
		return norm.NFC.String(s)
	}
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	start := 0
	for j := cut; j < len(s); {
		r, n := utf8.DecodeRuneInString(s[j:])
		if r >= utf8.RuneSelf && propsOf(r)&propNew != 0 {
			b.WriteString(norm.NFC.String(s[start:j]))
			b.WriteString(s[j : j+n])
			start = j + n
		}
		j += n
	}
	b.WriteString(norm.NFC.String(s[start:]))
	return b.String()
}
