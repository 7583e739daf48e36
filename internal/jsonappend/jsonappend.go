// Package jsonappend appends JSON text without reflection: strings and id arrays on the hot paths
// (stream chunks, events, token-id prompts), where encoding/json's allocations and HTML escaping are
// unwanted.
package jsonappend

import (
	"strconv"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// String appends s as a JSON string as Python's json.dumps(ensure_ascii=False) and pydantic write
// it: `"` and `\` escaped, control characters as \n \r \t \b \f or \u00XX, everything else verbatim
// (no HTML escaping). Invalid UTF-8 becomes U+FFFD.
func String(dst []byte, s string) []byte { return appendString(dst, s, false) }

// StringJS is String that also escapes U+2028 and U+2029, which end a line in JavaScript source
// (encoding/json does the same): for text that browsers or Node may evaluate.
func StringJS(dst []byte, s string) []byte { return appendString(dst, s, true) }

func appendString(dst []byte, s string, lineSeparators bool) []byte {
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

// Uint32s appends ids as a JSON array of numbers ([] for none).
func Uint32s(dst []byte, ids []uint32) []byte {
	dst = append(dst, '[')
	for i, id := range ids {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = strconv.AppendUint(dst, uint64(id), 10)
	}
	return append(dst, ']')
}
