package jinja

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/stitchllm/stitch/internal/pyfmt"
)

// lexer turns template source into tokens with the rules of Jinja2's
// lexer in transformers' configuration: trim_blocks and lstrip_blocks on,
// "-" and "+" whitespace control, raw blocks, comments, newlines
// normalized to "\n" and one trailing newline dropped
// (keep_trailing_newline=False).
type lexer struct {
	name   string
	src    string
	pos    int
	line   int
	toks   []token
	braces []byte
	// lineStarting reports whether the previous match ended with "\n"
	// (Jinja2's line_starting, used by lstrip_blocks at a line start).
	lineStarting bool
}

// normalizeNewlines rewrites "\r\n" and "\r" to "\n" and drops one
// trailing newline, as Jinja2's tokeniter does.
func normalizeNewlines(src string) string {
	if strings.IndexByte(src, '\r') >= 0 {
		src = strings.ReplaceAll(src, "\r\n", "\n")
		src = strings.ReplaceAll(src, "\r", "\n")
	}
	return strings.TrimSuffix(src, "\n")
}

func lex(name, src string) ([]token, error) {
	lx := &lexer{name: name, src: normalizeNewlines(src), line: 1, lineStarting: true}
	if err := lx.run(); err != nil {
		return nil, err
	}
	lx.toks = append(lx.toks, token{typ: tokEOF, span: span{pos: len(lx.src), line: lx.line}})
	return lx.toks, nil
}

func (lx *lexer) errorf(format string, args ...any) error {
	return newError(KindSyntax, lx.name, lx.line, format, args...)
}

// advance moves to p, counting lines.
func (lx *lexer) advance(p int) {
	lx.line += strings.Count(lx.src[lx.pos:p], "\n")
	lx.pos = p
}

func (lx *lexer) emit(typ tokenType, val string, start int, line int) {
	lx.toks = append(lx.toks, token{typ: typ, val: val, span: span{pos: start, line: line}})
}

// rstripPy strips trailing whitespace as Python's str.rstrip() does.
func rstripPy(s string) string {
	return strings.TrimRightFunc(s, isPySpace)
}

// isPySpace reports whether r is whitespace for Python's str.isspace and
// the re module's \s.
func isPySpace(r rune) bool { return pyfmt.IsSpace(r) }

// skipSpace returns the offset after the whitespace run at p.
func (lx *lexer) skipSpace(p int) int {
	for p < len(lx.src) {
		r, n := utf8.DecodeRuneInString(lx.src[p:])
		if !isPySpace(r) {
			break
		}
		p += n
	}
	return p
}

// stripText applies "-" and lstrip_blocks to the text before a tag.
func (lx *lexer) stripText(text string, sign byte, isVar bool) string {
	switch {
	case sign == '-':
		return rstripPy(text)
	case sign == '+' || isVar:
		return text
	}
	l := strings.LastIndexByte(text, '\n') + 1
	if l > 0 || lx.lineStarting {
		rest := text[l:]
		if rest != "" && strings.TrimLeftFunc(rest, isPySpace) == "" {
			return text[:l]
		}
	}
	return text
}

func (lx *lexer) run() error {
	src := lx.src
	for lx.pos < len(src) {
		// Find the next tag opening.
		i := lx.pos
		var kind byte
		for {
			j := strings.IndexByte(src[i:], '{')
			if j < 0 || i+j+1 >= len(src) {
				i = -1
				break
			}
			i += j
			if c := src[i+1]; c == '{' || c == '%' || c == '#' {
				kind = c
				break
			}
			i++
		}
		if i < 0 {
			lx.emit(tokData, src[lx.pos:], lx.pos, lx.line)
			lx.advance(len(src))
			return nil
		}
		p := i + 2
		var sign byte
		if p < len(src) && (src[p] == '-' || src[p] == '+') {
			sign = src[p]
			p++
		}
		text := lx.stripText(src[lx.pos:i], sign, kind == '{')
		if text != "" {
			lx.emit(tokData, text, lx.pos, lx.line)
		}
		if kind == '%' {
			if end, ok := lx.matchRawBegin(p); ok {
				lx.advance(end)
				lx.lineStarting = src[end-1] == '\n'
				if err := lx.lexRaw(); err != nil {
					return err
				}
				continue
			}
		}
		lx.advance(p)
		lx.lineStarting = false
		var err error
		switch kind {
		case '#':
			err = lx.lexComment()
		case '%':
			lx.emit(tokBlockBegin, "", i, lx.line)
			err = lx.lexTag(true)
		default:
			lx.emit(tokVarBegin, "", i, lx.line)
			err = lx.lexTag(false)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// matchRawBegin matches `\s*raw\s*(-%}\s*|%})` at p.
func (lx *lexer) matchRawBegin(p int) (int, bool) {
	src := lx.src
	p = lx.skipSpace(p)
	if !strings.HasPrefix(src[p:], "raw") {
		return 0, false
	}
	p = lx.skipSpace(p + 3)
	switch {
	case strings.HasPrefix(src[p:], "-%}"):
		return lx.skipSpace(p + 3), true
	case strings.HasPrefix(src[p:], "%}"):
		return p + 2, true
	}
	return 0, false
}

// blockEnd matches the end of a block tag at p: "+%}", "-%}" plus
// whitespace, or "%}" plus one newline (trim_blocks).
func (lx *lexer) blockEnd(p int, closer string) (int, bool) {
	src := lx.src
	switch {
	case strings.HasPrefix(src[p:], "+"+closer):
		return p + 3, true
	case strings.HasPrefix(src[p:], "-"+closer):
		return lx.skipSpace(p + 3), true
	case strings.HasPrefix(src[p:], closer):
		p += 2
		if p < len(src) && src[p] == '\n' {
			p++
		}
		return p, true
	}
	return 0, false
}

func (lx *lexer) lexRaw() error {
	src := lx.src
	for k := lx.pos; ; k++ {
		j := strings.Index(src[k:], "{%")
		if j < 0 {
			return lx.errorf("Missing end of raw directive")
		}
		k += j
		p := k + 2
		var sign byte
		if p < len(src) && (src[p] == '-' || src[p] == '+') {
			sign = src[p]
			p++
		}
		p = lx.skipSpace(p)
		if !strings.HasPrefix(src[p:], "endraw") {
			continue
		}
		p = lx.skipSpace(p + 6)
		end, ok := lx.blockEnd(p, "%}")
		if !ok {
			continue
		}
		text := lx.stripText(src[lx.pos:k], sign, false)
		if text != "" {
			lx.emit(tokData, text, lx.pos, lx.line)
		}
		lx.advance(end)
		lx.lineStarting = src[end-1] == '\n'
		return nil
	}
}

func (lx *lexer) lexComment() error {
	src := lx.src
	j := strings.Index(src[lx.pos:], "#}")
	if j < 0 {
		return lx.errorf("Missing end of comment tag")
	}
	k := lx.pos + j
	end := k + 2
	if k > lx.pos && src[k-1] == '-' {
		end = lx.skipSpace(end)
	} else if !(k > lx.pos && src[k-1] == '+') && end < len(src) && src[end] == '\n' {
		end++
	}
	lx.advance(end)
	lx.lineStarting = src[end-1] == '\n'
	return nil
}

var operators2 = []string{"**", "//", "==", "!=", ">=", "<="}

const operators1 = "+-/*%~[](){}><=.:|,;"

func isNameStart(r rune) bool {
	return r == '_' || unicode.IsLetter(r)
}

func isNameChar(r rune) bool {
	return r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func (lx *lexer) lexTag(block bool) error {
	src := lx.src
	for {
		if lx.pos >= len(src) {
			return nil // the parser reports the unexpected end
		}
		if len(lx.braces) == 0 {
			if block {
				if end, ok := lx.blockEnd(lx.pos, "%}"); ok {
					lx.emit(tokBlockEnd, "", lx.pos, lx.line)
					lx.advance(end)
					lx.lineStarting = src[end-1] == '\n'
					return nil
				}
			} else {
				end, ok := 0, false
				if strings.HasPrefix(src[lx.pos:], "-}}") {
					end, ok = lx.skipSpace(lx.pos+3), true
				} else if strings.HasPrefix(src[lx.pos:], "}}") {
					end, ok = lx.pos+2, true
				}
				if ok {
					lx.emit(tokVarEnd, "", lx.pos, lx.line)
					lx.advance(end)
					lx.lineStarting = src[end-1] == '\n'
					return nil
				}
			}
		}
		start, line := lx.pos, lx.line
		c := src[start]
		r, size := utf8.DecodeRuneInString(src[start:])
		switch {
		case isPySpace(r):
			lx.advance(lx.skipSpace(start))
		case isDigit(c):
			end, typ := lx.scanNumber(start)
			lx.emit(typ, src[start:end], start, line)
			lx.advance(end)
		case isNameStart(r):
			end := start + size
			for end < len(src) {
				r2, n2 := utf8.DecodeRuneInString(src[end:])
				if !isNameChar(r2) {
					break
				}
				end += n2
			}
			lx.emit(tokName, src[start:end], start, line)
			lx.advance(end)
		case c == '\'' || c == '"':
			end, val, err := lx.scanString(start)
			if err != nil {
				return err
			}
			lx.emit(tokString, val, start, line)
			lx.advance(end)
		default:
			op := ""
			for _, o := range operators2 {
				if strings.HasPrefix(src[start:], o) {
					op = o
					break
				}
			}
			if op == "" && strings.IndexByte(operators1, c) >= 0 {
				op = src[start : start+1]
			}
			if op == "" {
				return lx.errorf("unexpected char %s at %d", pyReprString(string(r)), start)
			}
			switch op {
			case "{":
				lx.braces = append(lx.braces, '}')
			case "(":
				lx.braces = append(lx.braces, ')')
			case "[":
				lx.braces = append(lx.braces, ']')
			case "}", ")", "]":
				if len(lx.braces) == 0 {
					return lx.errorf("unexpected '%s'", op)
				}
				want := lx.braces[len(lx.braces)-1]
				lx.braces = lx.braces[:len(lx.braces)-1]
				if want != op[0] {
					return lx.errorf("unexpected '%s', expected '%c'", op, want)
				}
			}
			lx.emit(tokOp, op, start, line)
			lx.advance(start + len(op))
		}
	}
}

// scanDigits scans `(\d+_)*\d+` (or the hex/oct/bin variant) at p.
func scanDigits(s string, p int, ok func(byte) bool) int {
	q := p
	for q < len(s) {
		if ok(s[q]) {
			q++
			continue
		}
		if s[q] == '_' && q > p && q+1 < len(s) && ok(s[q+1]) {
			q++
			continue
		}
		break
	}
	return q
}

// scanNumber scans an integer or float literal at p (Jinja2's float_re
// is tried before integer_re).
func (lx *lexer) scanNumber(p int) (int, tokenType) {
	s := lx.src
	if p == 0 || s[p-1] != '.' {
		q := scanDigits(s, p, isDigit)
		frac := q
		if frac+1 < len(s) && s[frac] == '.' && isDigit(s[frac+1]) {
			frac = scanDigits(s, frac+1, isDigit)
		}
		if frac < len(s) && (s[frac] == 'e' || s[frac] == 'E') {
			e := frac + 1
			if e < len(s) && (s[e] == '+' || s[e] == '-') {
				e++
			}
			if e < len(s) && isDigit(s[e]) {
				return scanDigits(s, e, isDigit), tokFloat
			}
		}
		if frac > q {
			return frac, tokFloat
		}
	}
	if s[p] == '0' && p+2 < len(s) {
		var ok func(byte) bool
		switch s[p+1] | 0x20 {
		case 'b':
			ok = func(c byte) bool { return c == '0' || c == '1' }
		case 'o':
			ok = func(c byte) bool { return c >= '0' && c <= '7' }
		case 'x':
			ok = func(c byte) bool { return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'f') }
		}
		if ok != nil {
			q := p + 2
			if s[q] == '_' {
				q++
			}
			if q < len(s) && ok(s[q]) {
				return scanDigits(s, q, ok), tokInt
			}
		}
	}
	if s[p] == '0' {
		q := p + 1
		for q < len(s) && (s[q] == '0' || (s[q] == '_' && q+1 < len(s) && s[q+1] == '0')) {
			q++
		}
		return q, tokInt
	}
	return scanDigits(s, p, isDigit), tokInt
}

// scanString scans a quoted literal at p and decodes it the way Jinja2
// does (Python's unicode-escape codec).
func (lx *lexer) scanString(p int) (int, string, error) {
	s := lx.src
	q := s[p]
	i := p + 1
	for i < len(s) {
		switch s[i] {
		case '\\':
			i += 2
			continue
		case q:
			return i + 1, unescapePy(s[p+1 : i]), nil
		}
		i++
	}
	return 0, "", lx.errorf("unexpected char %s at %d", pyReprString(string(q)), p)
}

// unescapePy decodes backslash escapes like Python's unicode-escape codec;
// unknown escapes are kept as written.
func unescapePy(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if isHexN(s[i+1:], n) {
				r := rune(0)
				for _, h := range s[i+1 : i+1+n] {
					r = r*16 + rune(hexVal(byte(h)))
				}
				writeRune(&b, r)
				i += n
			} else {
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		default:
			if e >= '0' && e <= '7' {
				r := rune(e - '0')
				k := 1
				for k < 3 && i+k < len(s) && s[i+k] >= '0' && s[i+k] <= '7' {
					r = r*8 + rune(s[i+k]-'0')
					k++
				}
				writeRune(&b, r)
				i += k - 1
			} else {
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		}
	}
	return b.String()
}

func writeRune(b *strings.Builder, r rune) {
	if r > unicode.MaxRune || (r >= 0xd800 && r < 0xe000) {
		r = utf8.RuneError
	}
	b.WriteRune(r)
}

func isHexN(s string, n int) bool {
	if len(s) < n {
		return false
	}
	for i := 0; i < n; i++ {
		if hexVal(s[i]) < 0 {
			return false
		}
	}
	return true
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}
