package stream

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/internal/pyfmt"
)

// The families that write tool arguments in another syntax (qwen3_coder's and
// GLM's XML parameters, pythonic calls) are converted to JSON the way vLLM's
// parsers do: the values are read into Python objects (json.loads,
// ast.literal_eval, int(), float()) and the arguments dict is written with
// json.dumps(..., ensure_ascii=False). The functions here produce that
// json.dumps text directly: separators ", " and ": ", non-ASCII kept, floats
// in Python's repr.

// pyQuote returns json.dumps(s, ensure_ascii=False) (jsonappend.String writes exactly that).
func pyQuote(s string) string { return string(jsonappend.String(nil, s)) }

// pyFloat returns json.dumps(f).
func pyFloat(f float64) string { return pyfmt.DumpsFloat(f) }

// pyIntText normalizes a Python int literal's digits (no sign, no
// underscores, base 10) to its decimal text without leading zeros.
func pyIntText(neg bool, digits string, base int) (string, bool) {
	n, ok := new(big.Int).SetString(digits, base)
	if !ok {
		return "", false
	}
	if neg {
		n.Neg(n)
	}
	return n.String(), true
}

// pyInt converts s as Python's int(s) does for a str (surrounding whitespace,
// a sign, underscores between digits; ASCII digits only here) and returns
// json.dumps of it.
func pyInt(s string) (string, bool) {
	s = strings.TrimSpace(s)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	d, ok := pyDigits(s, isDec)
	if !ok {
		return "", false
	}
	return pyIntText(neg, d, 10)
}

func isDec(c byte) bool { return c >= '0' && c <= '9' }

// pyDigits removes single underscores between digits; it fails on an empty
// string, a non-digit, or a leading, trailing or doubled underscore.
func pyDigits(s string, ok func(byte) bool) (string, bool) {
	if s == "" {
		return "", false
	}
	var b []byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '_' {
			if i == 0 || i == len(s)-1 || s[i-1] == '_' {
				return "", false
			}
			continue
		}
		if !ok(c) {
			return "", false
		}
		b = append(b, c)
	}
	return string(b), true
}

// pyParseFloat converts s as Python's float(s) does.
func pyParseFloat(s string) (float64, bool) { return pyfmt.ParseFloat(s) }

// pyNumberFloat is qwen3_coder's conversion of a "number" parameter: float(s),
// then int(f) when it has no fraction; json.dumps of the result. NaN and
// infinities fail (vLLM's int() raises there).
func pyNumberFloat(s string) (string, bool) {
	f, ok := pyParseFloat(s)
	if !ok || math.IsNaN(f) || math.IsInf(f, 0) {
		return "", false
	}
	if f == math.Trunc(f) {
		t, _ := new(big.Float).SetFloat64(f).Int(nil)
		return t.String(), true
	}
	return pyFloat(f), true
}

// pyValueParser reads one Python literal (mode python: ast.literal_eval's
// constants, lists, tuples, dicts, unary signs) or one JSON document (mode
// json: json.loads, with NaN/Infinity) and writes json.dumps of it.
type pyValueParser struct {
	s      string
	i      int
	python bool
	out    strings.Builder
	depth  int
	// trailingComma reports that the last list element was followed by a
	// comma ((x,) is a tuple, (x) is not).
	trailingComma bool
}

const pyMaxDepth = 512

// pyJSONLoadsDumps returns json.dumps(json.loads(s), ensure_ascii=False);
// str reports that the value is a JSON string (its decoded text in strVal).
func pyJSONLoadsDumps(s string) (out string, strVal string, isStr bool, ok bool) {
	p := &pyValueParser{s: s}
	p.ws()
	start := p.i
	if !p.value() {
		return "", "", false, false
	}
	end := p.i
	p.ws()
	if p.i != len(p.s) {
		return "", "", false, false
	}
	if p.s[start] == '"' {
		v, _ := pyReadString(s[start:end], false)
		return p.out.String(), v, true, true
	}
	return p.out.String(), "", false, true
}

// pyLiteralDumps returns json.dumps(ast.literal_eval(s), ensure_ascii=False);
// isStr reports a str result (decoded in strVal).
func pyLiteralDumps(s string) (out string, strVal string, isStr bool, ok bool) {
	p := &pyValueParser{s: s, python: true}
	p.ws()
	start := p.i
	if !p.value() {
		return "", "", false, false
	}
	p.ws()
	if p.i != len(p.s) {
		return "", "", false, false
	}
	if c := p.s[start]; c == '"' || c == '\'' {
		v, _ := pyReadString(strings.TrimSpace(s), true)
		return p.out.String(), v, true, true
	}
	return p.out.String(), "", false, true
}

func (p *pyValueParser) ws() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		case '\\':
			// line continuation in Python source
			if p.python && p.i+1 < len(p.s) && p.s[p.i+1] == '\n' {
				p.i += 2
				continue
			}
			return
		default:
			return
		}
	}
}

func (p *pyValueParser) value() bool {
	if p.i >= len(p.s) {
		return false
	}
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > pyMaxDepth {
		return false
	}
	c := p.s[p.i]
	switch {
	case c == '"' || (p.python && c == '\''):
		v, n := pyReadString(p.s[p.i:], p.python)
		if n == 0 {
			return false
		}
		p.i += n
		if p.python {
			// implicit concatenation of adjacent literals
			for {
				save := p.i
				p.ws()
				if p.i < len(p.s) && (p.s[p.i] == '"' || p.s[p.i] == '\'') {
					w, m := pyReadString(p.s[p.i:], true)
					if m == 0 {
						return false
					}
					v += w
					p.i += m
					continue
				}
				p.i = save
				break
			}
		}
		p.out.WriteString(pyQuote(v))
		return true
	case c == '{':
		return p.dict()
	case c == '[':
		return p.list(']')
	case c == '(' && p.python:
		return p.list(')')
	}
	return p.scalar()
}

func (p *pyValueParser) list(close byte) bool {
	p.i++
	p.out.WriteByte('[')
	n := 0
	for {
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == close {
			if close == ')' && n == 1 && !p.trailingComma {
				return false // (x) is not a tuple; only (x,) is
			}
			p.i++
			p.out.WriteByte(']')
			p.trailingComma = false
			return true
		}
		if n > 0 {
			p.out.WriteString(", ")
		}
		if !p.value() {
			return false
		}
		n++
		p.ws()
		p.trailingComma = false
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			p.trailingComma = true
			if !p.python {
				p.ws()
				if p.i < len(p.s) && p.s[p.i] == close {
					return false // JSON allows no trailing comma
				}
			}
			continue
		}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == close {
			continue
		}
		return false
	}
}

func (p *pyValueParser) dict() bool {
	p.i++
	p.out.WriteByte('{')
	n := 0
	for {
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			p.i++
			p.out.WriteByte('}')
			return true
		}
		if n > 0 {
			p.out.WriteString(", ")
		}
		if !p.key() {
			return false
		}
		p.ws()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return false
		}
		p.i++
		p.out.WriteString(": ")
		p.ws()
		if !p.value() {
			return false
		}
		n++
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == ',' {
			p.i++
			if !p.python {
				p.ws()
				if p.i < len(p.s) && p.s[p.i] == '}' {
					return false
				}
			}
			continue
		}
		p.ws()
		if p.i < len(p.s) && p.s[p.i] == '}' {
			continue
		}
		return false
	}
}

// key writes a dict key as json.dumps does: str as is; int, float, bool and
// None keys as their JSON text in quotes.
func (p *pyValueParser) key() bool {
	if p.i >= len(p.s) {
		return false
	}
	c := p.s[p.i]
	if c == '"' || (p.python && c == '\'') {
		return p.value()
	}
	if !p.python {
		return false
	}
	var sub pyValueParser
	sub.s, sub.i, sub.python = p.s, p.i, true
	if !sub.scalar() {
		return false
	}
	p.i = sub.i
	p.out.WriteString(pyQuote(sub.out.String()))
	return true
}

// scalar reads a number or a keyword constant.
func (p *pyValueParser) scalar() bool {
	rest := p.s[p.i:]
	words := [][2]string{{"true", "true"}, {"false", "false"}, {"null", "null"}, {"NaN", "NaN"}, {"Infinity", "Infinity"}, {"-Infinity", "-Infinity"}}
	if p.python {
		words = [][2]string{{"True", "true"}, {"False", "false"}, {"None", "null"}}
	}
	for _, w := range words {
		if strings.HasPrefix(rest, w[0]) && (len(rest) == len(w[0]) || !isIdentByte(rest[len(w[0])])) {
			p.i += len(w[0])
			p.out.WriteString(w[1])
			return true
		}
	}
	if p.python {
		return p.pyNumber()
	}
	return p.jsonNumber()
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

func (p *pyValueParser) jsonNumber() bool {
	j := p.i
	s := p.s
	if j < len(s) && s[j] == '-' {
		j++
	}
	if j >= len(s) || !isDec(s[j]) {
		return false
	}
	if s[j] == '0' {
		j++
	} else {
		for j < len(s) && isDec(s[j]) {
			j++
		}
	}
	isFloat := false
	if j < len(s) && s[j] == '.' {
		j++
		if j >= len(s) || !isDec(s[j]) {
			return false
		}
		for j < len(s) && isDec(s[j]) {
			j++
		}
		isFloat = true
	}
	if j < len(s) && (s[j] == 'e' || s[j] == 'E') {
		k := j + 1
		if k < len(s) && (s[k] == '+' || s[k] == '-') {
			k++
		}
		if k < len(s) && isDec(s[k]) {
			for k < len(s) && isDec(s[k]) {
				k++
			}
			j = k
			isFloat = true
		}
	}
	text := s[p.i:j]
	p.i = j
	if isFloat {
		f, err := strconv.ParseFloat(text, 64)
		if err != nil && !isRangeErr(err) {
			return false
		}
		p.out.WriteString(pyFloat(f))
		return true
	}
	neg := strings.HasPrefix(text, "-")
	v, ok := pyIntText(neg, strings.TrimPrefix(text, "-"), 10)
	if !ok {
		return false
	}
	p.out.WriteString(v)
	return true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// pyNumber reads a Python numeric literal with optional unary signs.
func (p *pyValueParser) pyNumber() bool {
	neg := false
	for p.i < len(p.s) && (p.s[p.i] == '-' || p.s[p.i] == '+') {
		if p.s[p.i] == '-' {
			neg = !neg
		}
		p.i++
		p.ws()
	}
	s := p.s
	j := p.i
	if j+1 < len(s) && s[j] == '0' && strings.IndexByte("xXoObB", s[j+1]) >= 0 {
		base := map[byte]int{'x': 16, 'X': 16, 'o': 8, 'O': 8, 'b': 2, 'B': 2}[s[j+1]]
		k := j + 2
		if k < len(s) && s[k] == '_' {
			k++
		}
		for k < len(s) && (isIdentByte(s[k])) {
			k++
		}
		d, ok := pyDigits(strings.TrimPrefix(s[j+2:k], "_"), func(c byte) bool {
			v, err := strconv.ParseUint(string(c), base, 8)
			return err == nil && int(v) < base
		})
		if !ok {
			return false
		}
		v, ok := pyIntText(neg, d, base)
		if !ok {
			return false
		}
		p.i = k
		p.out.WriteString(v)
		return true
	}
	k := j
	for k < len(s) && (isDec(s[k]) || s[k] == '_' || s[k] == '.' || s[k] == 'e' || s[k] == 'E' ||
		((s[k] == '+' || s[k] == '-') && k > j && (s[k-1] == 'e' || s[k-1] == 'E'))) {
		k++
	}
	text := s[j:k]
	if text == "" || text == "." || (k < len(s) && isIdentByte(s[k])) {
		return false
	}
	p.i = k
	if !strings.ContainsAny(text, ".eE") {
		d, ok := pyDigits(text, isDec)
		if !ok || (len(d) > 1 && d[0] == '0' && strings.Trim(d, "0") != "") {
			return false // 007 is a syntax error
		}
		v, _ := pyIntText(neg, d, 10)
		p.out.WriteString(v)
		return true
	}
	f, ok := pyParseFloat(text)
	if !ok || strings.ContainsAny(text, "iInN") {
		return false
	}
	if neg {
		f = -f
	}
	p.out.WriteString(pyFloat(f))
	return true
}

// pyReadString reads a quoted string literal at the start of s (JSON when
// python is false; a Python str literal, no prefixes or triple quotes, when
// true) and returns its value and length (0 when it is not one).
func pyReadString(s string, python bool) (string, int) {
	if s == "" {
		return "", 0
	}
	q := s[0]
	if q != '"' && !(python && q == '\'') {
		return "", 0
	}
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == q:
			return b.String(), i + 1
		case c == '\\':
			if i+1 >= len(s) {
				return "", 0
			}
			e := s[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				if e == '/' && python {
					b.WriteString(`\/`)
					continue
				}
				b.WriteByte(e)
			case '\'':
				if !python {
					return "", 0
				}
				b.WriteByte(e)
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case 'r':
				b.WriteByte('\r')
			case 'b':
				b.WriteByte('\b')
			case 'f':
				b.WriteByte('\f')
			case '\n':
				if !python {
					return "", 0
				}
			case 'u', 'x', 'U':
				n := map[byte]int{'u': 4, 'x': 2, 'U': 8}[e]
				if !python && e != 'u' {
					return "", 0
				}
				if i+n > len(s) {
					return "", 0
				}
				v, err := strconv.ParseUint(s[i:i+n], 16, 32)
				if err != nil {
					return "", 0
				}
				i += n
				r := rune(v)
				if !python && utf16IsHigh(r) && i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
					if lo, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil && utf16IsLow(rune(lo)) {
						r = (r-0xD800)<<10 + (rune(lo) - 0xDC00) + 0x10000
						i += 6
					}
				}
				if !utf8.ValidRune(r) {
					r = utf8.RuneError
				}
				b.WriteRune(r)
			default:
				if !python {
					return "", 0
				}
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case c < 0x20 && !python:
			return "", 0 // json.loads is strict about control characters
		case c == '\n' && python:
			return "", 0
		default:
			b.WriteByte(c)
			i++
		}
	}
	return "", 0
}

func utf16IsHigh(r rune) bool { return r >= 0xD800 && r < 0xDC00 }
func utf16IsLow(r rune) bool  { return r >= 0xDC00 && r < 0xE000 }
