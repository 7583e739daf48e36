package jinja

// tokenType is the closed set of lexical token kinds.
type tokenType uint8

const (
	tokEOF tokenType = iota
	tokData
	tokVarBegin
	tokVarEnd
	tokBlockBegin
	tokBlockEnd
	tokName
	tokString
	tokInt
	tokFloat
	tokOp
)

func (t tokenType) String() string {
	switch t {
	case tokEOF:
		return "end of template"
	case tokData:
		return "template data"
	case tokVarBegin:
		return "begin of print statement"
	case tokVarEnd:
		return "end of print statement"
	case tokBlockBegin:
		return "begin of statement block"
	case tokBlockEnd:
		return "end of statement block"
	case tokName:
		return "name"
	case tokString:
		return "string"
	case tokInt:
		return "integer"
	case tokFloat:
		return "float"
	default:
		return "operator"
	}
}

// span locates a token or node in the template source: the byte offset
// and the 1-based line where it starts.
type span struct {
	pos  int
	line int
}

// token is one lexical token. For tokString val is the decoded literal;
// for tokInt and tokFloat it is the source spelling.
type token struct {
	typ tokenType
	val string
	span
}

// describe spells the token the way Jinja2 names it in syntax errors.
func (t token) describe() string {
	switch t.typ {
	case tokName, tokOp:
		return t.val
	default:
		return t.typ.String()
	}
}
