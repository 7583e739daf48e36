package stream

import "encoding/json"

// hermesCall scans the body of one hermes tool call,
// `{"name": "fn", "arguments": {...}}` (whitespace around it allowed), a byte
// at a time. It reports which bytes belong to the arguments object so they
// can be streamed verbatim, and fails at the first byte that cannot be part of
// a well-formed call: a non-object body, a non-string name, a non-object
// arguments value, a duplicate name or arguments key, bad JSON, or trailing
// text after the object.
type hermesCall struct {
	state   callState
	val     jsonScanner
	field   callField
	started bool   // the current member value has begun
	raw     []byte // raw key or name token being scanned
	name    string
	hasName bool
	args    []byte // raw arguments text so far
	argsOK  bool   // the arguments object is complete
}

type callState uint8

const (
	csPre      callState = iota // before '{'
	csKeyOrEnd                  // after '{'
	csKey                       // after ','
	csKeyStr                    // inside a key
	csColon
	csValue
	csNext // after a member value
	csDone // after the closing '}'
	csFailed
)

type callField uint8

const (
	fieldOther callField = iota
	fieldName
	fieldArgs
)

func (h *hermesCall) reset() {
	args := h.args[:0]
	raw := h.raw[:0]
	stack := h.val.stack[:0]
	*h = hermesCall{args: args, raw: raw}
	h.val.stack = stack
}

// usable reports whether name and a complete arguments object are known, even
// if the outer object is not closed (models sometimes drop the last brace).
func (h *hermesCall) usable() bool { return h.hasName && h.argsOK }

func (h *hermesCall) fail() (bool, bool) {
	h.state = csFailed
	return false, false
}

// step feeds one byte. isArg reports that c is part of the arguments object;
// ok is false at the first byte that makes the call malformed.
func (h *hermesCall) step(c byte) (isArg, ok bool) {
	switch h.state {
	case csPre:
		if isSpace(c) {
			return false, true
		}
		if c == '{' {
			h.state = csKeyOrEnd
			return false, true
		}
	case csKeyOrEnd, csKey:
		if isSpace(c) {
			return false, true
		}
		if c == '"' {
			h.val.reset()
			h.val.step(c)
			h.raw = append(h.raw[:0], c)
			h.state = csKeyStr
			return false, true
		}
		if c == '}' && h.state == csKeyOrEnd {
			return h.close()
		}
	case csKeyStr:
		h.raw = append(h.raw, c)
		switch h.val.step(c) {
		case scanMore:
			return false, true
		case scanEnd:
			var key string
			if json.Unmarshal(h.raw, &key) != nil {
				return h.fail()
			}
			switch key {
			case "name":
				if h.hasName {
					return h.fail()
				}
				h.field = fieldName
			case "arguments":
				if h.argsOK || len(h.args) > 0 {
					return h.fail()
				}
				h.field = fieldArgs
			default:
				h.field = fieldOther
			}
			h.state = csColon
			return false, true
		}
	case csColon:
		if isSpace(c) {
			return false, true
		}
		if c == ':' {
			h.state = csValue
			h.started = false
			h.val.reset()
			return false, true
		}
	case csValue:
		if !h.started {
			if isSpace(c) {
				return false, true
			}
			if (h.field == fieldName && c != '"') || (h.field == fieldArgs && c != '{') {
				return h.fail()
			}
			h.started = true
			h.raw = h.raw[:0]
		}
		r := h.val.step(c)
		if r == scanSyntaxErr {
			return h.fail()
		}
		switch h.field {
		case fieldName:
			h.raw = append(h.raw, c)
			if r == scanEnd {
				if json.Unmarshal(h.raw, &h.name) != nil || h.name == "" {
					return h.fail()
				}
				h.hasName = true
			}
		case fieldArgs:
			h.args = append(h.args, c)
			isArg = true
			if r == scanEnd {
				h.argsOK = true
			}
		}
		switch r {
		case scanEnd:
			h.state = csNext
		case scanEndBefore: // a number ended just before c
			h.state = csNext
			return h.step(c)
		}
		return isArg, true
	case csNext:
		if isSpace(c) {
			return false, true
		}
		if c == ',' {
			h.state = csKey
			return false, true
		}
		if c == '}' {
			return h.close()
		}
	case csDone:
		if isSpace(c) {
			return false, true
		}
	}
	return h.fail()
}

func (h *hermesCall) close() (bool, bool) {
	if !h.usable() {
		return h.fail()
	}
	h.state = csDone
	return false, true
}
