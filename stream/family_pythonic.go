package stream

import "strings"

type pyState uint8

const (
	pyOpen      pyState = iota // expecting [
	pyList                     // after [ or a "," between calls: a function name
	pyFName                    // in the function name
	pyArgs                     // after ( or ",": a keyword or )
	pyKw                       // in a keyword
	pyEq                       // after the keyword: =
	pyValStart                 // after =
	pyVal                      // in a value
	pyAfterVal                 // after a value: "," or )
	pyAfterCall                // after ): "," or ]
	pyDone                     // after ]
)

// pythonicFormat reads [f(a=1, b="x"), g()] (vllm/tool_parsers/pythonic_tool_parser.py):
// each keyword value is a Python literal, converted with json.dumps as vLLM
// does, and emitted when it ends.
type pythonicFormat struct {
	state   pyState
	ident   strings.Builder
	val     strings.Builder
	stack   []byte // open brackets and quotes of the value
	escape  bool
	kw      string
	fname   string
	nparams int
}

func (f *pythonicFormat) reset(p *FamilyParser, k markerKind) {
	f.state = pyOpen
}

func (f *pythonicFormat) marker(p *FamilyParser, dst []Piece, k markerKind, text string, idx int) []Piece {
	p.raw = append(p.raw, text...)
	return p.breakCall(dst, false)
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func (f *pythonicFormat) text(p *FamilyParser, dst []Piece, s string, idx int) []Piece {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch f.state {
		case pyOpen:
			if c != '[' {
				return p.breakCall(dst, false)
			}
			f.state = pyList
		case pyList:
			if isSpace(c) {
				continue
			}
			if !isIdentStart(c) {
				return p.breakCall(dst, false)
			}
			if p.calls > 0 {
				p.markCall(idx)
			}
			f.ident.Reset()
			f.ident.WriteByte(c)
			f.state = pyFName
		case pyFName:
			switch {
			case isIdentByte(c) && c < 0x80:
				if f.ident.Len() >= maxHeaderLen {
					return p.breakCall(dst, false)
				}
				f.ident.WriteByte(c)
			case c == '(':
				// The call begins at its first keyword's "=" or at ")": a
				// positional argument before that makes it text, as vLLM's
				// pattern check does.
				f.nparams = 0
				f.fname = f.ident.String()
				f.state = pyArgs
			default:
				return p.breakCall(dst, false)
			}
		case pyArgs:
			if isSpace(c) {
				continue
			}
			if c == ')' {
				dst = p.beginCall(dst, f.fname, "")
				dst = f.closeCall(p, dst, idx)
				continue
			}
			if !isIdentStart(c) {
				return p.breakCall(dst, false)
			}
			f.ident.Reset()
			f.ident.WriteByte(c)
			f.state = pyKw
		case pyKw, pyEq:
			switch {
			case f.state == pyKw && isIdentByte(c) && c < 0x80:
				f.ident.WriteByte(c)
			case isSpace(c):
				f.state = pyEq
			case c == '=':
				f.kw = f.ident.String()
				f.state = pyValStart
				dst = p.beginCall(dst, f.fname, "")
			default:
				return p.breakCall(dst, false)
			}
		case pyValStart:
			if isSpace(c) {
				continue
			}
			f.val.Reset()
			f.stack = f.stack[:0]
			f.escape = false
			f.state = pyVal
			i--
		case pyVal:
			if len(f.stack) == 0 && (c == ',' || c == ')') {
				out, _, _, ok := pyLiteralDumps(f.val.String())
				if !ok {
					return p.breakCall(dst, false)
				}
				sep := ", "
				if f.nparams == 0 {
					sep = "{"
				}
				f.nparams++
				dst = p.args(dst, sep+pyQuote(f.kw)+": "+out)
				f.state = pyAfterVal
				i--
				continue
			}
			if !f.scanValue(c) {
				return p.breakCall(dst, false)
			}
			f.val.WriteByte(c)
		case pyAfterVal:
			if isSpace(c) {
				continue
			}
			switch c {
			case ',':
				f.state = pyArgs
			case ')':
				dst = f.closeCall(p, dst, idx)
			default:
				return p.breakCall(dst, false)
			}
		case pyAfterCall:
			if isSpace(c) {
				continue
			}
			switch c {
			case ',':
				f.state = pyList
			case ']':
				f.state = pyDone
			default:
				return p.breakCall(dst, true)
			}
		case pyDone:
			if isSpace(c) {
				continue
			}
			// Text after the list: the message continues.
			return p.exitRegionText(dst, s[i:])
		}
	}
	return dst
}

// scanValue tracks brackets and quotes of a value; false on a mismatch.
func (f *pythonicFormat) scanValue(c byte) bool {
	if n := len(f.stack); n > 0 && (f.stack[n-1] == '"' || f.stack[n-1] == '\'') {
		switch {
		case f.escape:
			f.escape = false
		case c == '\\':
			f.escape = true
		case c == f.stack[n-1]:
			f.stack = f.stack[:n-1]
		}
		return true
	}
	switch c {
	case '"', '\'', '[', '(', '{':
		if len(f.stack) >= pyMaxDepth {
			return false
		}
		f.stack = append(f.stack, c)
	case ']', ')', '}':
		open := map[byte]byte{']': '[', ')': '(', '}': '{'}[c]
		if n := len(f.stack); n == 0 || f.stack[n-1] != open {
			return false
		}
		f.stack = f.stack[:len(f.stack)-1]
	}
	return true
}

func (f *pythonicFormat) closeCall(p *FamilyParser, dst []Piece, idx int) []Piece {
	if f.nparams == 0 {
		dst = p.args(dst, "{}")
	} else {
		dst = p.args(dst, "}")
	}
	dst = p.endCall(dst, idx+1, false, "")
	f.state = pyAfterCall
	return dst
}

func (f *pythonicFormat) finish(p *FamilyParser, dst []Piece, end int) []Piece {
	switch {
	case f.state == pyDone || f.state == pyAfterCall && p.calls > 0 && !p.callOpen:
		p.exitRegion(end)
		return dst
	case p.callOpen:
		dst = p.endCall(dst, end, true, "")
		p.exitRegion(end)
		return dst
	}
	return p.breakCall(dst, false)
}
