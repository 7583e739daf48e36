package render

import (
	"bytes"
	"encoding/binary"
	"iter"
	"math/bits"
	"slices"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/jsonscan"

	"github.com/tidwall/gjson"
)

// This file is the JSON reading of Responses items. It replaces gjson on the per-item path, where
// gjson dominated the cost of a long conversation: ValidBytes checks strings byte by byte, every
// Get rescans the object from its start (skipping a tool output of many kilobytes once per key)
// and unescaping appends one byte at a time. Here an item is validated once, its members are
// located in one pass and only the strings that are kept are unescaped.
//
// Behaviour is gjson's, exactly: validJSON accepts what gjson.ValidBytes accepts, lookup finds
// the member gjson's Get finds for a plain key (the first one, keys compared after unescaping),
// and jsonVal.str unescapes as gjson does. FuzzValidJSON, FuzzItemJSON and
// FuzzResponsesMatchReference check this against gjson itself.

// jsonVal is the text of one value inside validated JSON; nil means absent.
type jsonVal []byte

func (v jsonVal) exists() bool   { return v != nil }
func (v jsonVal) isString() bool { return len(v) > 0 && v[0] == '"' }
func (v jsonVal) isArray() bool  { return len(v) > 0 && v[0] == '[' }
func (v jsonVal) isObject() bool { return len(v) > 0 && v[0] == '{' }

// isNullish reports an absent or null value, what gjson types Null.
func (v jsonVal) isNullish() bool { return v == nil || string(v) == "null" }

// str returns a string value's text, unescaped, in memory of its own (not the item's bytes,
// which belong to the caller). It is "" for other values, like gjson's Result.Str.
func (v jsonVal) str() string {
	if !v.isString() {
		return ""
	}
	body := v[1 : len(v)-1]
	if bytes.IndexByte(body, '\\') < 0 {
		return string(body)
	}
	return unescape(body)
}

// text is gjson's Result.String(): the unescaped text of a string, the raw text of anything else
// (numbers spelled as gjson spells them). Only error messages use it.
func (v jsonVal) text() string {
	if v.isString() {
		return v.str()
	}
	return gjson.Parse(string(v)).String()
}

// elems yields the elements of an array value (any other value yields nothing).
func (v jsonVal) elems() iter.Seq[jsonVal] {
	return func(yield func(jsonVal) bool) {
		if !v.isArray() {
			return
		}
		for i := skipWS(v, 1); v[i] != ']'; {
			end := valueEnd(v, i)
			if !yield(v[i:end]) {
				return
			}
			if i = skipWS(v, end); v[i] == ',' {
				i = skipWS(v, i+1)
			}
		}
	}
}

// lookup sets vals[k] to the value of the object's first member named keys[k], as gjson's
// Get(keys[k]) would find it, in one pass over the object. vals[k] stays nil for a missing key.
// Nothing happens when v is not an object.
func (v jsonVal) lookup(keys []string, vals []jsonVal) {
	if !v.isObject() {
		return
	}
	set := memberSet{keys: keys, vals: vals}
	for i := skipWS(v, 1); v[i] != '}'; {
		keyEnd := stringEnd(v, i+1)
		start := skipWS(v, skipWS(v, keyEnd)+1) // past the colon
		end := valueEnd(v, start)
		set.record(v[i+1:keyEnd-1], v[start:end])
		if i = skipWS(v, end); v[i] == ',' {
			i = skipWS(v, i+1)
		}
	}
}

// memberSet collects the values of the wanted keys of one object.
type memberSet struct {
	keys []string
	vals []jsonVal
}

// record notes one member (its key as written, escapes included): the first one of a name wins.
func (m *memberSet) record(key, val []byte) {
	if k := keyIndex(m.keys, key); k >= 0 && m.vals[k] == nil {
		m.vals[k] = val
	}
}

// keyIndex returns the index of key (a member name as written, escapes included) in keys, or -1.
func keyIndex(keys []string, key []byte) int {
	if bytes.IndexByte(key, '\\') >= 0 {
		return slices.Index(keys, unescape(key))
	}
	for k, want := range keys {
		if string(key) == want { // compared in place, not allocated
			return k
		}
	}
	return -1
}

// skipWS returns the index of the first byte at or after i that is not JSON whitespace.
func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the value that starts at b[i]; b is valid JSON.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i+1)
	case '{', '[':
		return nestedEnd(b, i)
	}
	for i < len(b) && !isDelim(b[i]) { // number, true, false or null
		i++
	}
	return i
}

func isDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// stringEnd returns the index after the closing quote of the string whose body starts at b[i].
// The byte after a backslash is never the closing quote (nor is any of a \uXXXX's digits).
func stringEnd(b []byte, i int) int {
	for {
		i = jsonscan.NextQuoteOrBackslash(b, i)
		if b[i] == '"' {
			return i + 1
		}
		i += 2
	}
}

// nestedEnd returns the index after the object or array that starts at b[i].
func nestedEnd(b []byte, i int) int {
	depth := 0
	for {
		switch b[i] {
		case '"':
			i = stringEnd(b, i+1)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				return i + 1
			}
		}
		i++
	}
}

// unescape decodes a valid JSON string body as gjson does: a high surrogate escape followed by a
// low one is one character; any other surrogate becomes U+FFFD. It copies eight bytes at a time
// and then keeps only those before the first backslash, which beats copying runs (tool outputs
// have an escape every few bytes) and byte-by-byte loops alike.
func unescape(body []byte) string {
	dst := make([]byte, len(body)+8) // decoding never grows; +8 for the last word copied
	n, i := 0, 0
	for {
		k := copyToBackslash(dst[n:], body[i:])
		n, i = n+k, i+k
		if i == len(body) {
			return string(dst[:n])
		}
		if c := body[i+1]; c != 'u' {
			dst[n] = simpleEscape(c)
			n, i = n+1, i+2
			continue
		}
		r, rest := unescapeRune(body[i+2:])
		n += utf8.EncodeRune(dst[n:], r)
		i = len(body) - len(rest)
	}
}

// simpleEscape returns what a backslash followed by c (valid, not 'u') stands for.
func simpleEscape(c byte) byte {
	switch c {
	case 'b':
		return '\b'
	case 'f':
		return '\f'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	}
	return c // '"', '\\' or '/'
}

// copyToBackslash copies src up to its first backslash into dst, which has room for len(src)+8
// bytes, and returns the number of bytes before the backslash (len(src) when there is none).
func copyToBackslash(dst, src []byte) int {
	i := 0
	for ; i+8 <= len(src); i += 8 {
		w := binary.LittleEndian.Uint64(src[i:])
		binary.LittleEndian.PutUint64(dst[i:], w)
		if m := jsonscan.EqMask(w, '\\'); m != 0 {
			return i + bits.TrailingZeros64(m)/8
		}
	}
	for ; i < len(src) && src[i] != '\\'; i++ {
		dst[i] = src[i]
	}
	return i
}

// unescapeRune decodes the four hex digits of a \u escape at the start of b and, when they are a
// high surrogate, a following \uDC00-\uDFFF escape. It returns the rest of b.
func unescapeRune(b []byte) (rune, []byte) {
	r := hexRune(b)
	b = b[4:]
	if r >= 0xD800 && r < 0xDC00 && len(b) >= 6 && b[0] == '\\' && b[1] == 'u' {
		if r2 := hexRune(b[2:]); r2 >= 0xDC00 && r2 < 0xE000 {
			return utf16.DecodeRune(r, r2), b[6:]
		}
	}
	return r, b
}

// hexRune reads four hex digits (validated).
func hexRune(b []byte) rune {
	n, _ := strconv.ParseUint(string(b[:4]), 16, 32)
	return rune(n)
}

// validJSON reports whether b is one JSON value with optional whitespace around it. It accepts
// exactly what gjson.ValidBytes accepts but finds the end of a string's plain runs eight bytes
// at a time.
func validJSON(b []byte) bool { return validItem(b, nil) }

// validItem is validJSON that, when b is an object, also does what lookup does for set: the item
// is validated and its members located in one pass, which matters for a tool output of many
// kilobytes.
func validItem(b []byte, set *memberSet) bool {
	i := skipWS(b, 0)
	var ok bool
	if i < len(b) && b[i] == '{' {
		i, ok = validObject(b, i+1, set)
	} else {
		i, ok = validValue(b, i)
	}
	return ok && skipWS(b, i) == len(b)
}

// validValue validates the value starting at b[i] (after whitespace) and returns its end.
func validValue(b []byte, i int) (int, bool) {
	i = skipWS(b, i)
	if i == len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{':
		return validObject(b, i+1, nil)
	case c == '[':
		return validArray(b, i+1)
	case c == '"':
		return validString(b, i+1)
	case c == '-' || c >= '0' && c <= '9':
		return validNumber(b, i)
	case c == 't':
		return validLiteral(b, i, "true")
	case c == 'f':
		return validLiteral(b, i, "false")
	case c == 'n':
		return validLiteral(b, i, "null")
	}
	return i, false
}

// validObject validates the object whose members start at b[i]; set, when not nil, records them.
func validObject(b []byte, i int, set *memberSet) (int, bool) {
	if i = skipWS(b, i); i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return i, false
		}
		keyStart := i + 1
		var ok bool
		if i, ok = validString(b, keyStart); !ok {
			return i, false
		}
		key := b[keyStart : i-1]
		if i = skipWS(b, i); i >= len(b) || b[i] != ':' {
			return i, false
		}
		start := skipWS(b, i+1)
		if i, ok = validValue(b, start); !ok {
			return i, false
		}
		if set != nil {
			set.record(key, b[start:i])
		}
		if i = skipWS(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipWS(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

func validArray(b []byte, i int) (int, bool) {
	if i = skipWS(b, i); i < len(b) && b[i] == ']' {
		return i + 1, true
	}
	for {
		var ok bool
		if i, ok = validValue(b, i); !ok {
			return i, false
		}
		if i = skipWS(b, i); i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i++
		case ']':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// validString validates the string whose body starts at b[i] and returns the index after its
// closing quote.
func validString(b []byte, i int) (int, bool) {
	for {
		if i = jsonscan.NextStringSpecial(b, i); i == len(b) {
			return i, false
		}
		switch b[i] {
		case '"':
			return i + 1, true
		case '\\':
			n := escapeLen(b[i+1:])
			if n == 0 {
				return i, false
			}
			i += 1 + n
		default: // a control character
			return i, false
		}
	}
}

// escapeLen returns the length of the valid escape that follows a backslash at the start of b
// (1, or 5 for \uXXXX), or 0 when it is not one.
func escapeLen(b []byte) int {
	if len(b) == 0 {
		return 0
	}
	switch b[0] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		return 1
	case 'u':
		if len(b) < 5 {
			return 0
		}
		for _, c := range b[1:5] {
			if !isHex(c) {
				return 0
			}
		}
		return 5
	}
	return 0
}

func isHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// validNumber validates the number starting at b[i] with gjson's grammar (JSON's).
func validNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		if i++; i == len(b) || !isDigit(b[i]) {
			return i, false
		}
	}
	if b[i] == '0' {
		i++
	} else {
		i = skipDigits(b, i)
	}
	if i < len(b) && b[i] == '.' {
		if i++; i == len(b) || !isDigit(b[i]) {
			return i, false
		}
		i = skipDigits(b, i)
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if i++; i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i == len(b) || !isDigit(b[i]) {
			return i, false
		}
		i = skipDigits(b, i)
	}
	return i, true
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func skipDigits(b []byte, i int) int {
	for i < len(b) && isDigit(b[i]) {
		i++
	}
	return i
}

func validLiteral(b []byte, i int, lit string) (int, bool) {
	if !bytes.HasPrefix(b[i:], []byte(lit)) {
		return i, false
	}
	return i + len(lit), true
}
