// Package jsonappend appends JSON text without reflection: strings and id arrays on the hot paths
// (stream chunks, events, token-id prompts), where encoding/json's allocations and HTML escaping are
// unwanted.
package jsonappend

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// String appends s as a JSON string as Python's json.dumps(ensure_ascii=False) and pydantic write
// it: `"` and `\` escaped, control characters as \n \r \t \b \f or \u00XX, everything else verbatim
// (no HTML escaping). Invalid UTF-8 becomes U+FFFD.
func String(dst []byte, s string) []byte { return appendString(dst, s, false, false) }

// StringJS is String that also escapes U+2028 and U+2029, which end a line in JavaScript source
// (encoding/json does the same): for text that browsers or Node may evaluate.
func StringJS(dst []byte, s string) []byte { return appendString(dst, s, true, false) }

// StringASCII is String as json.dumps writes it by default (ensure_ascii=True): every non-ASCII
// character as \uXXXX in lowercase hex, outside the BMP as a UTF-16 surrogate pair.
func StringASCII(dst []byte, s string) []byte { return appendString(dst, s, false, true) }

func appendString(dst []byte, s string, lineSeparators, ascii bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case ascii:
			dst = append(dst, s[start:i]...)
			if r >= 0x10000 {
				r1, r2 := utf16.EncodeRune(r)
				dst = appendU(appendU(dst, r1), r2)
			} else {
				dst = appendU(dst, r) // invalid UTF-8 decodes as U+FFFD
			}
			start = i + size
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			start = i + size
		case lineSeparators && (r == '\u2028' || r == '\u2029'):
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			start = i + size
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendU appends r (at most 0xFFFF) as \uXXXX.
func appendU(dst []byte, r rune) []byte {
	return append(dst, '\\', 'u', hexDigits[r>>12&0xF], hexDigits[r>>8&0xF], hexDigits[r>>4&0xF], hexDigits[r&0xF])
}

// Uint32s appends ids as a JSON array of numbers ([] for none).
func Uint32s(dst []byte, ids []uint32) []byte {
	dst = append(dst, '[')
	if len(ids) == 0 {
		return append(dst, ']')
	}
	dst = Uint32sEach(dst, ids, ',')
	dst[len(dst)-1] = ']'
	return dst
}

// digitPairs holds the two decimal digits of 0…99.
const digitPairs = "00010203040506070809101112131415161718192021222324252627282930313233343536373839" +
	"40414243444546474849505152535455565758596061626364656667686970717273747576777879" +
	"8081828384858687888990919293949596979899"

// maxUint32Digits is the length of the longest uint32 in decimal, 4294967295.
const maxUint32Digits = 10

// decimalLen returns the number of decimal digits of v.
func decimalLen(v uint32) int {
	switch {
	case v < 10:
		return 1
	case v < 100:
		return 2
	case v < 1000:
		return 3
	case v < 10000:
		return 4
	case v < 100000:
		return 5
	case v < 1000000:
		return 6
	case v < 10000000:
		return 7
	case v < 100000000:
		return 8
	case v < 1000000000:
		return 9
	}
	return 10
}

// Uint32sEach appends each of ids in decimal followed by sep: the bulk of a token-id prompt's
// JSON (100k ids a full render, a few thousand a continuation, where it cost about 40 % of
// tokenizing the new text). Like append, it may write into dst's capacity beyond the result (at
// most 8 bytes).
func Uint32sEach(dst []byte, ids []uint32, sep byte) []byte {
	return appendChunked(dst, ids, func(b []byte, n int, ids []uint32) int { return appendChunk(b, n, ids, sep) })
}

// appendChunked appends ids to dst a chunk at a time, each written by write at b[n:] (b is dst
// up to its capacity, with room for 11 bytes per id of the chunk and 8 more; write returns the
// offset after what it wrote), growing dst between chunks as they need: the room is checked
// once per chunk rather than once per id.
func appendChunked(dst []byte, ids []uint32, write func(b []byte, n int, ids []uint32) int) []byte {
	const chunk = 256 // ids written between checks of the room
	n := len(dst)
	for len(ids) > 0 {
		k := min(len(ids), chunk)
		if cap(dst)-n < k*(maxUint32Digits+1)+8 {
			dst = slices.Grow(dst[:n], (maxUint32Digits+1)*min(len(ids), 1024)+8)
		}
		n = write(dst[:cap(dst)], n, ids[:k])
		ids = ids[k:]
	}
	return dst[:n]
}

// appendChunk writes ids each followed by sep at b[n:], which has room for 11 bytes per id and 8
// more, and returns the offset after the last sep. The inner loop calls nothing, so its state
// stays in registers.
//
// An id is written with one branch on its size, below a thousand (about 80 % of a real prompt's
// ids: 2 and 3 digits in equal parts, a branch on which was mispredicted about every other id)
// or a million (every vocabulary's), not on its exact length: its digits, leading zeros
// included, and sep are built in one little-endian word, the leading zeros are shifted out, and
// the word is stored whole. Above a thousand the three digit pairs come from one fixed-point
// product (jeaiii's method: v·⌈2³²/10⁴⌉ holds v/10⁴ in its top 32 bits and the remainder as a
// binary fraction below, from which each multiplication by 100 lifts the next pair); the error,
// below v·0.28/2³², never reaches a digit for v < 10⁶ (TestUint32sEachBelowMillion checks all of
// them against strconv). On a 100k Qwen3 continuation's new ids this takes about 0.8× the time of
// counting the digits first and writing two at a time; on ids spread evenly over a 152k
// vocabulary, 0.6× (BenchmarkUint32sEach).
func appendChunk(b []byte, n int, ids []uint32, sep byte) int {
	for _, v := range ids {
		if v < 1000 {
			// Most of a prompt's ids (common words, punctuation, code): one digit and a pair.
			hi := v * 41 >> 12 // v / 100 for v < 1000
			w := uint64('0'+hi) | digitPair(uint64(v-100*hi))<<8 | uint64(sep)<<24
			skip := bits.TrailingZeros32((uint32(w)&0xFFFFFF-0x303030)|1<<16) / 8
			binary.LittleEndian.PutUint32(b[n:n+4], uint32(w>>(8*skip)))
			n += 4 - skip
			continue
		}
		if v >= 1000000 {
			n = appendLong(b, n, v, sep)
			continue
		}
		t := uint64(v) * 429497 // ⌈2³²/10⁴⌉
		hi := t >> 32
		t = uint64(uint32(t)) * 100
		mid := t >> 32
		t = uint64(uint32(t)) * 100
		low := t >> 32
		w := digitPair(hi) | digitPair(mid)<<16 | digitPair(low)<<32 | uint64(sep)<<48
		// The digits' values, 0…9 a byte; the first nonzero byte (the lowest: little-endian) is
		// the first significant digit. Bit 40, in the last digit's byte, keeps one digit of 0.
		skip := bits.TrailingZeros64((w&0xFFFFFFFFFFFF-0x303030303030)|1<<40) / 8
		binary.LittleEndian.PutUint64(b[n:n+8], w>>(8*skip))
		n += 7 - skip
	}
	return n
}

// IDTable holds the JSON text of every id below its size, each followed by a comma, in one word
// per id, for ids written over and over (a tokenizer's vocabulary, in every prompt):
// AppendEach copies an id's word instead of computing its digits, about 4× the speed of
// Uint32sEach on a 100k Qwen3 continuation's new ids. It costs 8 bytes per id (1.2 MB for a
// 152k vocabulary). Immutable; safe for concurrent use.
type IDTable struct {
	// words[v] is v's digits and the comma, little-endian, with their count in the top byte.
	words []uint64
}

// maxTableIDs bounds an IDTable: an id's digits and comma fill at most the 7 bytes below the
// count, six digits.
const maxTableIDs = 1000000

// NewIDTable returns the table of the ids below n (at most a million; larger ids are computed).
func NewIDTable(n int) *IDTable {
	t := &IDTable{words: make([]uint64, max(0, min(n, maxTableIDs)))}
	var b [16]byte
	for v := range t.words {
		s := b[:appendChunk(b[:], 0, []uint32{uint32(v)}, ',')]
		var w uint64
		for i, c := range s {
			w |= uint64(c) << (8 * i)
		}
		t.words[v] = w | uint64(len(s))<<56
	}
	return t
}

// AppendEach is Uint32sEach(dst, ids, ','), from the table for the ids it holds. A nil table
// computes every id. Like append, it may write into dst's capacity beyond the result.
func (t *IDTable) AppendEach(dst []byte, ids []uint32) []byte {
	if t == nil {
		return Uint32sEach(dst, ids, ',')
	}
	return appendChunked(dst, ids, t.appendChunk)
}

// appendChunk is appendChunk with sep ',' for t's ids: each id's word copied from the table, an
// id beyond it computed. Four ids at a time, their words loaded before any is stored: where each
// store goes depends on the word before it, so loading them one by one behind the stores kept the
// table's cache misses (a cold turn's; 1.2 MB for a 152k vocabulary) from overlapping. On 2,500
// ids shaped like a prompt's (4 in 5 below a thousand), alternating: 2.8-3.0 -> 2.0-2.2 us warm,
// 22-28 -> 19-22 us after 64 MB of other memory was touched.
func (t *IDTable) appendChunk(b []byte, n int, ids []uint32) int {
	words := t.words
	i := 0
	for ; i+4 <= len(ids); i += 4 {
		v0, v1, v2, v3 := ids[i], ids[i+1], ids[i+2], ids[i+3]
		if int(max(v0, v1, v2, v3)) >= len(words) {
			n = t.appendEach1(b, n, ids[i:i+4])
			continue
		}
		w0, w1, w2, w3 := words[v0], words[v1], words[v2], words[v3]
		binary.LittleEndian.PutUint64(b[n:n+8], w0) // each count's byte is overwritten next
		n += int(w0 >> 56)
		binary.LittleEndian.PutUint64(b[n:n+8], w1)
		n += int(w1 >> 56)
		binary.LittleEndian.PutUint64(b[n:n+8], w2)
		n += int(w2 >> 56)
		binary.LittleEndian.PutUint64(b[n:n+8], w3)
		n += int(w3 >> 56)
	}
	return t.appendEach1(b, n, ids[i:])
}

// appendEach1 is appendChunk one id at a time.
func (t *IDTable) appendEach1(b []byte, n int, ids []uint32) int {
	for i, v := range ids {
		if int(v) < len(t.words) {
			w := t.words[v]
			binary.LittleEndian.PutUint64(b[n:n+8], w) // the count's byte is overwritten next
			n += int(w >> 56)
		} else {
			n = appendChunk(b, n, ids[i:i+1], ',')
		}
	}
	return n
}

// digitPair returns the two ASCII digits of v (below 100) as a little-endian uint16.
func digitPair(v uint64) uint64 {
	return uint64(digitPairs[2*v]) | uint64(digitPairs[2*v+1])<<8
}

// appendLong writes v (any uint32) in decimal followed by sep at b[n:], which has room for
// them, and returns the offset after sep: two digits a step, after counting them.
func appendLong(b []byte, n int, v uint32, sep byte) int {
	end := n + decimalLen(v)
	i := end
	for v >= 100 {
		q := v / 100
		r := 2 * (v - 100*q)
		i -= 2
		b[i], b[i+1] = digitPairs[r], digitPairs[r+1]
		v = q
	}
	if v >= 10 {
		b[i-2], b[i-1] = digitPairs[2*v], digitPairs[2*v+1]
	} else {
		b[i-1] = '0' + byte(v)
	}
	b[end] = sep
	return end + 1
}
