package stream

// jsonScanner validates one JSON value (RFC 8259) fed a byte at a time, so the
// tool-call parser can stream argument bytes the moment they are known to be
// well formed and stop at the first byte that is not. It keeps no copy of the
// input; memory is the nesting stack.
type jsonScanner struct {
	state   scanState
	stack   []byte // '{' or '[' per open container
	inKey   bool   // the string being scanned is an object key
	lit     string // remaining bytes of true/false/null
	hexLeft int    // hex digits left in a \u escape
}

type scanState uint8

const (
	stValue         scanState = iota // expecting a value
	stObjKeyOrEnd                    // after '{'
	stObjKey                         // after ',' in an object
	stColon                          // after a key
	stObjNext                        // after a member value
	stArrValueOrEnd                  // after '['
	stArrNext                        // after an element
	stString
	stStringEsc
	stStringHex
	stNumMinus // after '-'
	stNumZero  // leading 0
	stNumInt   // integer digits
	stNumDot   // after '.'
	stNumFrac  // fraction digits
	stNumE     // after 'e'
	stNumESign // after the exponent sign
	stNumExp   // exponent digits
	stLiteral
	stDone
	stError
)

// scanResult is the outcome of one byte.
type scanResult uint8

const (
	scanMore      scanResult = iota // byte consumed, value not complete
	scanEnd                         // byte consumed and it completed the value
	scanEndBefore                   // the value ended just before this byte (a number); byte not consumed
	scanSyntaxErr                   // the byte cannot continue a JSON value
)

func (s *jsonScanner) reset() {
	s.state = stValue
	s.stack = s.stack[:0]
	s.inKey = false
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// complete reports whether the bytes so far form a whole value, counting a
// number that only needs end of input to finish.
func (s *jsonScanner) complete() bool {
	switch s.state {
	case stDone:
		return true
	case stNumZero, stNumInt, stNumFrac, stNumExp:
		return len(s.stack) == 0
	}
	return false
}

// valueEnd moves past a completed value.
func (s *jsonScanner) valueEnd() scanResult {
	if len(s.stack) == 0 {
		s.state = stDone
		return scanEnd
	}
	if s.stack[len(s.stack)-1] == '{' {
		s.state = stObjNext
	} else {
		s.state = stArrNext
	}
	return scanMore
}

func (s *jsonScanner) fail() scanResult {
	s.state = stError
	return scanSyntaxErr
}

// step feeds one byte.
func (s *jsonScanner) step(c byte) scanResult {
	switch s.state {
	case stValue, stArrValueOrEnd:
		if isSpace(c) {
			return scanMore
		}
		if c == ']' && s.state == stArrValueOrEnd {
			return s.close('[')
		}
		return s.beginValue(c)
	case stObjKeyOrEnd, stObjKey:
		switch {
		case isSpace(c):
			return scanMore
		case c == '"':
			s.inKey = true
			s.state = stString
			return scanMore
		case c == '}' && s.state == stObjKeyOrEnd:
			return s.close('{')
		}
		return s.fail()
	case stColon:
		switch {
		case isSpace(c):
			return scanMore
		case c == ':':
			s.state = stValue
			return scanMore
		}
		return s.fail()
	case stObjNext, stArrNext:
		open, closer := byte('{'), byte('}')
		next := stObjKey
		if s.state == stArrNext {
			open, closer, next = '[', ']', stValue
		}
		switch {
		case isSpace(c):
			return scanMore
		case c == ',':
			s.state = next
			return scanMore
		case c == closer:
			return s.close(open)
		}
		return s.fail()
	case stString:
		switch {
		case c == '"':
			if s.inKey {
				s.inKey = false
				s.state = stColon
				return scanMore
			}
			return s.valueEnd()
		case c == '\\':
			s.state = stStringEsc
		case c < 0x20:
			return s.fail()
		}
		return scanMore
	case stStringEsc:
		switch c {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			s.state = stString
		case 'u':
			s.state, s.hexLeft = stStringHex, 4
		default:
			return s.fail()
		}
		return scanMore
	case stStringHex:
		if !isHex(c) {
			return s.fail()
		}
		if s.hexLeft--; s.hexLeft == 0 {
			s.state = stString
		}
		return scanMore
	case stNumMinus:
		switch {
		case c == '0':
			s.state = stNumZero
		case '1' <= c && c <= '9':
			s.state = stNumInt
		default:
			return s.fail()
		}
		return scanMore
	case stNumZero, stNumInt, stNumFrac, stNumExp:
		switch {
		case isDigit(c) && s.state != stNumZero:
			return scanMore
		case c == '.' && (s.state == stNumZero || s.state == stNumInt):
			s.state = stNumDot
			return scanMore
		case (c == 'e' || c == 'E') && s.state != stNumExp:
			s.state = stNumE
			return scanMore
		}
		// The number ended before c; c must fit what follows a value.
		if r := s.valueEnd(); r == scanEnd {
			return scanEndBefore
		}
		return s.step(c)
	case stNumDot:
		if !isDigit(c) {
			return s.fail()
		}
		s.state = stNumFrac
		return scanMore
	case stNumE:
		switch {
		case c == '+' || c == '-':
			s.state = stNumESign
		case isDigit(c):
			s.state = stNumExp
		default:
			return s.fail()
		}
		return scanMore
	case stNumESign:
		if !isDigit(c) {
			return s.fail()
		}
		s.state = stNumExp
		return scanMore
	case stLiteral:
		if c != s.lit[0] {
			return s.fail()
		}
		if s.lit = s.lit[1:]; s.lit == "" {
			return s.valueEnd()
		}
		return scanMore
	}
	return s.fail() // stDone, stError
}

func (s *jsonScanner) beginValue(c byte) scanResult {
	switch {
	case c == '{':
		s.stack = append(s.stack, '{')
		s.state = stObjKeyOrEnd
	case c == '[':
		s.stack = append(s.stack, '[')
		s.state = stArrValueOrEnd
	case c == '"':
		s.state = stString
	case c == '-':
		s.state = stNumMinus
	case c == '0':
		s.state = stNumZero
	case '1' <= c && c <= '9':
		s.state = stNumInt
	case c == 't':
		s.state, s.lit = stLiteral, "rue"
	case c == 'f':
		s.state, s.lit = stLiteral, "alse"
	case c == 'n':
		s.state, s.lit = stLiteral, "ull"
	default:
		return s.fail()
	}
	return scanMore
}

func (s *jsonScanner) close(open byte) scanResult {
	if len(s.stack) == 0 || s.stack[len(s.stack)-1] != open {
		return s.fail()
	}
	s.stack = s.stack[:len(s.stack)-1]
	return s.valueEnd()
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'f') || ('A' <= c && c <= 'F')
}
