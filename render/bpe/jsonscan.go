package bpe

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// jsonScanner reads the two large parts of tokenizer.json (model.vocab, an object of string → int,
// and model.merges, an array of "a b" strings or ["a", "b"] pairs) in one pass without building
// intermediate values: about ten times faster than a generic decoder, and strict: anything else in
// them is an error.
type jsonScanner struct {
	s   string
	i   int
	err error
}

func (sc *jsonScanner) fail(format string, args ...any) {
	if sc.err == nil {
		sc.err = fmt.Errorf("%w: %s at byte %d", ErrInvalid, fmt.Sprintf(format, args...), sc.i)
	}
}

func (sc *jsonScanner) ws() {
	for sc.i < len(sc.s) && sc.s[sc.i] <= ' ' && isSpace[sc.s[sc.i]] {
		sc.i++
	}
}

var isSpace = [33]bool{' ': true, '\t': true, '\n': true, '\r': true}

// skipComposite skips an object or array quickly, tracking only strings and nesting. It is for the
// vocab and merges, which their strict scanners validate afterwards.
func (sc *jsonScanner) skipComposite() string {
	sc.ws()
	start, depth := sc.i, 0
	for sc.i < len(sc.s) {
		switch c := sc.s[sc.i]; c {
		case '"':
			sc.i++
			for sc.i < len(sc.s) && sc.s[sc.i] != '"' {
				if sc.s[sc.i] == '\\' {
					sc.i++
				}
				sc.i++
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				sc.i++
				return sc.s[start:sc.i]
			}
		}
		sc.i++
	}
	sc.fail("unterminated value")
	return ""
}

// peek skips whitespace and returns the next byte (0 at the end).
func (sc *jsonScanner) peek() byte {
	sc.ws()
	if sc.i >= len(sc.s) {
		return 0
	}
	return sc.s[sc.i]
}

func (sc *jsonScanner) expect(c byte) bool {
	if sc.peek() != c {
		sc.fail("expected %q", c)
		return false
	}
	sc.i++
	return true
}

// str reads a JSON string and returns its value. Strings without escapes are returned as
// substrings of the input without copying.
func (sc *jsonScanner) str() (string, bool) {
	if !sc.expect('"') {
		return "", false
	}
	start, escaped := sc.i, false
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			raw := sc.s[start:sc.i]
			sc.i++
			if !escaped {
				if !utf8.ValidString(raw) {
					sc.fail("invalid UTF-8 in string")
					return "", false
				}
				return raw, true
			}
			var v string
			if err := json.Unmarshal([]byte(sc.s[start-1:sc.i]), &v); err != nil {
				sc.fail("bad string: %v", err)
				return "", false
			}
			return v, true
		case c == '\\':
			escaped = true
			sc.i += 2
		case c < 0x20:
			sc.fail("control character in string")
			return "", false
		default:
			sc.i++
		}
	}
	sc.fail("unterminated string")
	return "", false
}

// uint reads a non-negative JSON integer below 2^31.
func (sc *jsonScanner) uint() (uint32, bool) {
	sc.ws()
	start := sc.i
	var n uint64
	for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
		n = n*10 + uint64(sc.s[sc.i]-'0')
		sc.i++
		if n >= 1<<31 {
			sc.fail("token id too large")
			return 0, false
		}
	}
	if sc.i == start || (sc.i-start > 1 && sc.s[start] == '0') {
		sc.fail("expected a token id")
		return 0, false
	}
	return uint32(n), true
}

// objectEntries calls fn for each "key": id of an object of integers.
func (sc *jsonScanner) objectEntries(fn func(key string, id uint32) bool) {
	if !sc.expect('{') {
		return
	}
	if sc.peek() == '}' {
		sc.i++
		return
	}
	for sc.err == nil {
		key, ok := sc.str()
		if !ok || !sc.expect(':') {
			return
		}
		id, ok := sc.uint()
		if !ok || !fn(key, id) {
			return
		}
		switch sc.peek() {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return
		default:
			sc.fail("expected ',' or '}'")
		}
	}
}

// mergeEntries calls fn for each merge of an array of "a b" strings or ["a", "b"] pairs.
func (sc *jsonScanner) mergeEntries(fn func(a, b string) bool) {
	if !sc.expect('[') {
		return
	}
	if sc.peek() == ']' {
		sc.i++
		return
	}
	for n := 1; sc.err == nil; n++ {
		var a, b string
		switch sc.peek() {
		case '"':
			s, ok := sc.str()
			if !ok {
				return
			}
			sp := -1
			for j := 0; j < len(s); j++ {
				if s[j] == ' ' {
					if sp >= 0 {
						sp = -2
						break
					}
					sp = j
				}
			}
			if sp < 0 {
				sc.fail("merge %d %q is not two tokens", n, s)
				return
			}
			a, b = s[:sp], s[sp+1:]
		case '[':
			sc.i++
			var ok bool
			if a, ok = sc.str(); !ok || !sc.expect(',') {
				return
			}
			if b, ok = sc.str(); !ok || !sc.expect(']') {
				return
			}
		default:
			sc.fail("merge %d is not a string or a pair", n)
			return
		}
		if !fn(a, b) {
			return
		}
		switch sc.peek() {
		case ',':
			sc.i++
		case ']':
			sc.i++
			return
		default:
			sc.fail("expected ',' or ']'")
		}
	}
}

// maxDepth bounds the nesting of values skipped by skipValue.
const maxDepth = 64

// rawValue validates and skips one JSON value and returns its text.
func (sc *jsonScanner) rawValue() string {
	sc.ws()
	start := sc.i
	sc.skipValue(0)
	if sc.err != nil {
		return ""
	}
	return sc.s[start:sc.i]
}

// skipValue validates and skips one JSON value.
func (sc *jsonScanner) skipValue(depth int) {
	if depth > maxDepth {
		sc.fail("nesting too deep")
		return
	}
	switch c := sc.peek(); {
	case c == '"':
		sc.skipString()
	case c == '{':
		sc.i++
		if sc.peek() == '}' {
			sc.i++
			return
		}
		for sc.err == nil {
			if sc.peek() != '"' {
				sc.fail("expected a key")
				return
			}
			sc.skipString()
			if !sc.expect(':') {
				return
			}
			sc.skipValue(depth + 1)
			switch sc.peek() {
			case ',':
				sc.i++
			case '}':
				sc.i++
				return
			default:
				sc.fail("expected ',' or '}'")
			}
		}
	case c == '[':
		sc.i++
		if sc.peek() == ']' {
			sc.i++
			return
		}
		for sc.err == nil {
			sc.skipValue(depth + 1)
			switch sc.peek() {
			case ',':
				sc.i++
			case ']':
				sc.i++
				return
			default:
				sc.fail("expected ',' or ']'")
			}
		}
	case c == '-' || (c >= '0' && c <= '9'):
		sc.skipNumber()
	case c == 't':
		sc.literal("true")
	case c == 'f':
		sc.literal("false")
	case c == 'n':
		sc.literal("null")
	default:
		sc.fail("unexpected %q", c)
	}
}

func (sc *jsonScanner) literal(word string) {
	if len(sc.s)-sc.i >= len(word) && sc.s[sc.i:sc.i+len(word)] == word {
		sc.i += len(word)
		return
	}
	sc.fail("bad literal")
}

// skipString skips a string, checking escapes, control characters and UTF-8.
func (sc *jsonScanner) skipString() {
	sc.i++ // opening quote
	start := sc.i
	for sc.i < len(sc.s) {
		c := sc.s[sc.i]
		switch {
		case c == '"':
			if !utf8.ValidString(sc.s[start:sc.i]) {
				sc.fail("invalid UTF-8 in string")
			}
			sc.i++
			return
		case c == '\\':
			if sc.i+1 >= len(sc.s) {
				sc.fail("unterminated string")
				return
			}
			switch sc.s[sc.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				sc.i += 2
			case 'u':
				if sc.i+6 > len(sc.s) || !isHex4(sc.s[sc.i+2:sc.i+6]) {
					sc.fail("bad \\u escape")
					return
				}
				sc.i += 6
			default:
				sc.fail("bad escape")
				return
			}
		case c < 0x20:
			sc.fail("control character in string")
			return
		default:
			sc.i++
		}
	}
	sc.fail("unterminated string")
}

func isHex4(s string) bool {
	for i := 0; i < 4; i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// skipNumber skips a number per the JSON grammar.
func (sc *jsonScanner) skipNumber() {
	digits := func() int {
		n := 0
		for sc.i < len(sc.s) && sc.s[sc.i] >= '0' && sc.s[sc.i] <= '9' {
			sc.i++
			n++
		}
		return n
	}
	if sc.s[sc.i] == '-' {
		sc.i++
	}
	if sc.i < len(sc.s) && sc.s[sc.i] == '0' {
		sc.i++
	} else if digits() == 0 {
		sc.fail("bad number")
		return
	}
	if sc.i < len(sc.s) && sc.s[sc.i] == '.' {
		sc.i++
		if digits() == 0 {
			sc.fail("bad number")
			return
		}
	}
	if sc.i < len(sc.s) && (sc.s[sc.i] == 'e' || sc.s[sc.i] == 'E') {
		sc.i++
		if sc.i < len(sc.s) && (sc.s[sc.i] == '+' || sc.s[sc.i] == '-') {
			sc.i++
		}
		if digits() == 0 {
			sc.fail("bad number")
		}
	}
}

// members calls fn for each member of an object, with the scanner at the member's value; fn must
// consume the value.
func (sc *jsonScanner) members(fn func(key string) bool) {
	if !sc.expect('{') {
		return
	}
	if sc.peek() == '}' {
		sc.i++
		return
	}
	for sc.err == nil {
		key, ok := sc.str()
		if !ok || !sc.expect(':') || !fn(key) || sc.err != nil {
			return
		}
		switch sc.peek() {
		case ',':
			sc.i++
		case '}':
			sc.i++
			return
		default:
			sc.fail("expected ',' or '}'")
		}
	}
}
