package server

import (
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/jsonscan"

	"github.com/tidwall/gjson"
)

// renderedTextBytes sums the bytes of an item's strings that the chat template renders: the
// length each string has once unescaped, as gjson's Get(...).Str would give it, counted on the
// raw item without copying it or unescaping its strings (an agent's tool outputs reach tens of
// kilobytes, and every input item is counted on every turn). item is a valid JSON object
// (parseRequest checked it); a repeated key counts its first value, as gjson's Get finds.
func renderedTextBytes(item []byte) int64 {
	typ, content, output, summary, _ := firstMembers(item, "type", "content", "output", "summary", "")
	switch {
	case stringIs(typ.raw, "message"):
		return content.textBytes()
	case stringIs(typ.raw, "function_call"):
		_, _, _, _, args := firstMembers(item, "", "", "", "", "arguments")
		return args.strLen
	case stringIs(typ.raw, "function_call_output"):
		return output.textBytes()
	case stringIs(typ.raw, "reasoning"):
		return summary.textBytes() + content.textBytes()
	}
	return 0
}

// member is an object member's raw value; strLen is its unescaped length when it is a string
// (counted while finding its end), else 0, which gjson's Str of a non-string is.
type member struct {
	raw    []byte
	strLen int64
}

// textBytes counts a content-like value: a string, or an array of parts whose "text" strings
// the template writes.
func (m member) textBytes() int64 {
	v := m.raw
	if len(v) == 0 || v[0] != '[' {
		return m.strLen
	}
	var n int64
	for i := skipSpace(v, 1); i < len(v) && v[i] != ']'; {
		end := valueEnd(v, i)
		if part := v[i:end]; part[0] == '{' {
			_, _, _, _, text := firstMembers(part, "", "", "", "", "text")
			n += text.strLen
		}
		i = skipSpace(v, end)
		if i < len(v) && v[i] == ',' {
			i = skipSpace(v, i+1)
		}
	}
	return n
}

// firstMembers returns the values of obj's members named k1…k5 (first occurrence each; an empty
// name is not looked up), zero for an absent one. obj is a valid JSON object.
func firstMembers(obj []byte, k1, k2, k3, k4, k5 string) (v1, v2, v3, v4, v5 member) {
	i := skipSpace(obj, 0)
	if i >= len(obj) || obj[i] != '{' {
		return
	}
	for i = skipSpace(obj, i+1); i < len(obj) && obj[i] == '"'; {
		keyEnd, _ := scanString(obj, i)
		key := obj[i:keyEnd]
		i = skipSpace(obj, keyEnd)
		if i >= len(obj) || obj[i] != ':' {
			return
		}
		i = skipSpace(obj, i+1)
		var val member
		end := 0
		if i < len(obj) && obj[i] == '"' {
			end, val.strLen = scanString(obj, i)
		} else {
			end = valueEnd(obj, i)
		}
		val.raw = obj[i:end]
		switch {
		case v1.raw == nil && stringIs(key, k1):
			v1 = val
		case v2.raw == nil && stringIs(key, k2):
			v2 = val
		case v3.raw == nil && stringIs(key, k3):
			v3 = val
		case v4.raw == nil && stringIs(key, k4):
			v4 = val
		case v5.raw == nil && stringIs(key, k5):
			v5 = val
		}
		i = skipSpace(obj, end)
		if i < len(obj) && obj[i] == ',' {
			i = skipSpace(obj, i+1)
		}
	}
	return
}

// stringIs reports whether raw is a JSON string whose unescaped value is s (s non-empty).
func stringIs(raw []byte, s string) bool {
	if s == "" || len(raw) < 2 || raw[0] != '"' {
		return false
	}
	inner := raw[1 : len(raw)-1]
	if len(inner) == len(s) && string(inner) == s {
		return true
	}
	for _, c := range inner {
		if c == '\\' { // rare: an escaped key or type; gjson compares it unescaped
			return gjson.Parse(string(raw)).Str == s
		}
	}
	return false
}

// scanString reads the JSON string starting at b[i] (a quote) of a valid document: it returns
// the index just past its closing quote and the length its value has once unescaped, as
// len(gjson's Str) gives it (the same escapes, a lone surrogate as utf8.RuneError), in one pass
// that skips eight plain bytes at a time.
func scanString(b []byte, i int) (end int, n int64) {
	start := i + 1 // of the plain bytes not yet counted
	for j := start; j < len(b); {
		if j = jsonscan.NextQuoteOrBackslash(b, j); j == len(b) {
			break
		}
		if b[j] == '"' {
			return j + 1, n + int64(j-start)
		}
		n += int64(j - start)
		j++
		if j >= len(b) {
			return len(b), n
		}
		if b[j] != 'u' {
			n++ // \\, \/, \b, \f, \n, \r, \t or \"
			j++
			start = j
			continue
		}
		if j+5 > len(b) {
			return len(b), n
		}
		r := hexRune(b[j+1:])
		j += 5
		if r >= 0xD800 && r < 0xDC00 && j+6 <= len(b) && b[j] == '\\' && b[j+1] == 'u' {
			if r2 := hexRune(b[j+2:]); r2 >= 0xDC00 && r2 < 0xE000 {
				r = utf16.DecodeRune(r, r2)
				j += 6
			}
		}
		n += int64(utf8.RuneLen(validRune(r)))
		start = j
	}
	return len(b), n
}

// validRune is r, or utf8.RuneError where utf8.EncodeRune would write that instead.
func validRune(r rune) rune {
	if utf8.ValidRune(r) {
		return r
	}
	return utf8.RuneError
}

// hexRune reads four hex digits as gjson's runeit does: 0 unless all four are hex digits.
func hexRune(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			r = r*16 + rune(c-'0')
		case c >= 'A' && c <= 'F':
			r = r*16 + rune(c-'A'+10)
		case c >= 'a' && c <= 'f':
			r = r*16 + rune(c-'a'+10)
		default:
			return 0
		}
	}
	return r
}

// skipSpace returns the index of the first byte at or after i that is not JSON whitespace.
func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the index just past the JSON value starting at b[i] (a valid document's).
func valueEnd(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		end, _ := scanString(b, i)
		return end
	case '{', '[':
		depth := 0
		for ; i < len(b); i++ {
			switch b[i] {
			case '"':
				i = valueEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return len(b)
	}
	for ; i < len(b); i++ {
		switch b[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
	}
	return i
}
