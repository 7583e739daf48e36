package stream

import (
	"encoding/json"
	"strings"
	"unicode"
)

// xmlStyle selects the XML-ish tool-call format.
type xmlStyle uint8

const (
	// styleQwenCoder: <tool_call>\n<function=NAME>\n<parameter=K>\nV\n</parameter>\n</function>\n</tool_call>
	// (vllm/tool_parsers/qwen3coder_tool_parser.py); <function=… and
	// <parameter=… are text, <tool_call> and </tool_call> marker ids.
	styleQwenCoder xmlStyle = iota
	// styleGLM45: <tool_call>NAME\n<arg_key>K</arg_key>\n<arg_value>V</arg_value>\n</tool_call>
	// (vllm/tool_parsers/glm4_moe_tool_parser.py); every tag is a marker id.
	styleGLM45
	// styleGLM47: the same without the newlines (vllm/tool_parsers/glm47_moe_tool_parser.py).
	styleGLM47
)

type xmlState uint8

const (
	xPre       xmlState = iota // qwen: before <function=
	xName                      // the function name
	xBody                      // between parameters
	xParamName                 // qwen: inside <parameter=…>
	xValue                     // a parameter value
	xAfterFunc                 // qwen: after </function>
	xKey                       // glm: inside <arg_key>…</arg_key>
	xAfterKey                  // glm: between </arg_key> and <arg_value>
)

const (
	qwenFunction     = "<function="
	qwenParameter    = "<parameter="
	qwenParameterEnd = "</parameter>"
	qwenFunctionEnd  = "</function>"
)

// xmlFormat reads qwen3_coder and GLM calls and converts their parameters to
// a JSON object the way vLLM does (json.dumps of the converted values). Each
// parameter is emitted when its value ends.
type xmlFormat struct {
	style   xmlStyle
	schemas toolSchemas
	state   xmlState
	buf     strings.Builder // text not yet consumed
	scanned int             // bytes of buf already searched for the value's end
	name    string
	key     string
	nparams int
	closed  bool // the arguments object was closed (</function>)

	// A qwen3_coder value that stays a string streams as it is written:
	// streaming is set for it, lead while its first byte (a "\n" vLLM
	// strips) is unknown.
	streaming bool
	lead      bool
}

func (f *xmlFormat) reset(p *FamilyParser, k markerKind) {
	f.state = xPre
	if f.style != styleQwenCoder {
		f.state = xName
	}
	f.buf.Reset()
	f.scanned = 0
	f.name, f.key = "", ""
	f.nparams = 0
	f.closed = false
}

func (f *xmlFormat) marker(p *FamilyParser, dst []Piece, k markerKind, text string, idx int) []Piece {
	if k == mkToolsBegin && idx == p.regionStart && len(p.raw) == 0 {
		p.raw = append(p.raw, text...)
		return dst
	}
	if k == mkToolsBegin {
		// A new <tool_call> inside a call.
		if p.callOpen {
			dst = p.endCall(dst, idx, true, "")
			p.malformed = p.malformed || !p.suppress
			p.exitRegion(idx)
		} else {
			dst = p.breakCall(dst, false)
		}
		p.enterRegion(idx, k)
		p.raw = append(p.raw, text...)
		return dst
	}
	p.raw = append(p.raw, text...)
	if k == mkToolsEnd {
		switch f.state {
		case xName:
			if f.style != styleQwenCoder {
				if dst = f.glmName(p, dst); !p.callOpen {
					return dst
				}
				return f.closeCall(p, dst, idx+1)
			}
		case xBody, xAfterFunc:
			if p.callOpen {
				return f.closeCall(p, dst, idx+1)
			}
		case xValue:
			if f.style == styleQwenCoder && p.callOpen {
				// vLLM takes a value cut by the end of the call as it is.
				if f.streaming {
					dst = f.endStream(p, dst, f.valueText(f.buf.String()))
				} else {
					dst = f.param(p, dst, f.valueText(f.buf.String()))
				}
				return f.closeCall(p, dst, idx+1)
			}
		}
		return p.breakCall(dst, false)
	}
	if f.style == styleQwenCoder {
		return p.breakCall(dst, false)
	}
	switch {
	case k == mkArgKey && f.state == xName:
		if dst = f.glmName(p, dst); !p.callOpen {
			return dst
		}
		f.state = xKey
		f.buf.Reset()
		return dst
	case k == mkArgKey && f.state == xBody:
		f.state = xKey
		f.buf.Reset()
		return dst
	case k == mkArgKeyEnd && f.state == xKey:
		f.key = pyStrip(f.buf.String())
		f.buf.Reset()
		f.state = xAfterKey
		return dst
	case k == mkArgValue && f.state == xAfterKey:
		f.state = xValue
		f.buf.Reset()
		// A "string"-typed value is the stripped text itself: it streams.
		f.streaming = f.schemas.glmIsString(f.name, f.key)
		f.lead = true
		if f.streaming {
			dst = f.paramStart(p, dst)
			dst = p.args(dst, "\"")
		}
		return dst
	case k == mkArgValueEnd && f.state == xValue:
		if f.streaming {
			// The held tail is trailing whitespace that strip() removes.
			f.streaming = false
			dst = p.args(dst, "\"")
		} else {
			dst = f.param(p, dst, f.buf.String())
		}
		f.buf.Reset()
		f.state = xBody
		return dst
	}
	return p.breakCall(dst, false)
}

// glmName ends a GLM function name and begins the call.
func (f *xmlFormat) glmName(p *FamilyParser, dst []Piece) []Piece {
	name := strings.TrimSpace(f.buf.String())
	f.buf.Reset()
	if !validFunctionName(name) {
		return p.breakCall(dst, false)
	}
	f.name = name
	f.state = xBody
	return p.beginCall(dst, name, "")
}

// validFunctionName is vLLM's qwen3_coder _is_valid_function_name: no
// template or quote characters, no whitespace, not empty.
func validFunctionName(name string) bool {
	return name != "" && !strings.ContainsAny(name, "{}<>\"' \t\n\r")
}

// closeCall writes the arguments' closing brace and ends the call.
func (f *xmlFormat) closeCall(p *FamilyParser, dst []Piece, end int) []Piece {
	dst = f.closeArgs(p, dst)
	dst = p.endCall(dst, end, false, "")
	p.exitRegion(end)
	return dst
}

// closeArgs writes the arguments' closing brace once.
func (f *xmlFormat) closeArgs(p *FamilyParser, dst []Piece) []Piece {
	if f.closed {
		return dst
	}
	f.closed = true
	if f.nparams == 0 {
		return p.args(dst, "{}")
	}
	return p.args(dst, "}")
}

// paramStart emits what precedes a parameter's value: "{" or ", ", its key.
func (f *xmlFormat) paramStart(p *FamilyParser, dst []Piece) []Piece {
	sep := ", "
	if f.nparams == 0 {
		sep = "{"
	}
	f.nparams++
	return p.args(dst, sep+pyQuote(f.key)+": ")
}

// valueEnd finds the end of a qwen3_coder value in b: the index of a
// </parameter> and whether it is structural. Like vLLM's _find_true_param_end,
// a </parameter> ends the value only when what follows it (after whitespace)
// is another parameter of the tool (any, without a schema), </function> or
// </tool_call>; one followed by other text is part of the value. A
// </parameter> with nothing decisive after it yet is returned undecided;
// -1 when there is none.
func (f *xmlFormat) valueEnd(b string) (int, bool) {
	for {
		j := strings.Index(b[min(f.scanned, len(b)):], qwenParameterEnd)
		if j < 0 {
			f.scanned = max(f.scanned, len(b)-len(qwenParameterEnd)+1)
			return -1, false
		}
		j += min(f.scanned, len(b))
		after := strings.TrimLeft(b[j+len(qwenParameterEnd):], " \t\r\n")
		switch {
		case strings.HasPrefix(after, qwenFunctionEnd):
			return j, true
		case strings.HasPrefix(after, qwenParameter):
			k := strings.IndexByte(after[len(qwenParameter):], '>')
			if k < 0 {
				f.scanned = j
				return j, false
			}
			if f.knownParam(after[len(qwenParameter) : len(qwenParameter)+k]) {
				return j, true
			}
		case after == "" || strings.HasPrefix(qwenFunctionEnd, after) || strings.HasPrefix(qwenParameter, after):
			f.scanned = j
			return j, false
		}
		f.scanned = j + len(qwenParameterEnd)
	}
}

// knownParam reports whether name is a parameter of the current tool (any
// name when the tool has no schema).
func (f *xmlFormat) knownParam(name string) bool {
	props, ok := f.schemas[f.name]
	if !ok || props == nil {
		return true
	}
	_, ok = props[name]
	return ok
}

// valueText returns the value in b at </tool_call>: up to an undecided
// </parameter>, else all of it.
func (f *xmlFormat) valueText(b string) string {
	if i, _ := f.valueEnd(b); i >= 0 {
		return b[:i]
	}
	if t := strings.TrimRight(b, " \t\r\n"); strings.HasSuffix(t, qwenFunctionEnd) {
		return t[:len(t)-len(qwenFunctionEnd)] // the function's end, as vLLM's fallback finds it
	}
	return b
}

// streamValue emits the part of a string value b[:limit] that can no longer
// be its trailing "\n</parameter>", and keeps the rest in the buffer.
func (f *xmlFormat) streamValue(p *FamilyParser, dst []Piece, b string, limit int) []Piece {
	if f.lead {
		if b == "" {
			return dst
		}
		if b[0] == '\n' {
			b, limit = b[1:], limit-1
			f.scanned = max(0, f.scanned-1)
		}
		f.lead = false
	}
	head := b[:limit]
	hold := 0
	for _, end := range []string{"\n" + qwenParameterEnd, qwenParameterEnd, "\n" + qwenFunctionEnd, qwenFunctionEnd} {
		for k := min(len(head), len(end)-1); k > hold; k-- {
			if strings.HasPrefix(end, head[len(head)-k:]) {
				hold = k
				break
			}
		}
	}
	// A </function> followed by nothing but whitespace may end the call
	// (a value whose </parameter> is missing).
	if i := strings.LastIndex(head, qwenFunctionEnd); i >= 0 && strings.TrimSpace(head[i+len(qwenFunctionEnd):]) == "" {
		if i > 0 && head[i-1] == '\n' {
			i--
		}
		hold = max(hold, len(head)-i)
	}
	n := limit - hold
	if n > 0 {
		q := pyQuote(b[:n])
		dst = p.args(dst, q[1:len(q)-1])
	}
	f.setBuf(b[n:])
	f.scanned = max(0, f.scanned-n)
	return dst
}

// endStream emits the rest of a streamed string value and its closing quote.
func (f *xmlFormat) endStream(p *FamilyParser, dst []Piece, rest string) []Piece {
	if f.lead {
		rest = strings.TrimPrefix(rest, "\n")
		f.lead = false
	}
	rest = strings.TrimSuffix(rest, "\n")
	q := pyQuote(rest)
	f.streaming = false
	return p.args(dst, q[1:len(q)-1]+"\"")
}

// param emits one converted parameter.
func (f *xmlFormat) param(p *FamilyParser, dst []Piece, raw string) []Piece {
	var v string
	if f.style == styleQwenCoder {
		raw = strings.TrimPrefix(raw, "\n")
		raw = strings.TrimSuffix(raw, "\n")
		v = f.schemas.qwenValue(f.name, f.key, raw)
	} else {
		v = f.schemas.glmValue(f.name, f.key, pyStrip(raw))
	}
	sep := ", "
	if f.nparams == 0 {
		sep = "{"
	}
	f.nparams++
	return p.args(dst, sep+pyQuote(f.key)+": "+v)
}

func (f *xmlFormat) text(p *FamilyParser, dst []Piece, s string, idx int) []Piece {
	f.buf.WriteString(s)
	if f.style != styleQwenCoder {
		return f.glmText(p, dst)
	}
	for {
		b := f.buf.String()
		switch f.state {
		case xPre, xBody, xAfterFunc:
			t := strings.TrimLeft(b, " \t\r\n")
			if t == "" {
				f.buf.Reset()
				return dst
			}
			want := []string{qwenFunction}
			if f.state == xBody {
				want = []string{qwenParameter, qwenFunctionEnd}
			} else if f.state == xAfterFunc {
				want = nil
			}
			matched := ""
			partial := false
			for _, w := range want {
				if strings.HasPrefix(t, w) {
					matched = w
				} else if strings.HasPrefix(w, t) {
					partial = true
				}
			}
			if matched == "" {
				if partial {
					return dst
				}
				if f.state == xBody {
					// vLLM skips text between parameters (it looks for the
					// next <parameter= or </function>).
					if j := strings.IndexByte(t[1:], '<'); j >= 0 {
						f.setBuf(t[1+j:])
						continue
					}
					f.buf.Reset()
					return dst
				}
				return p.breakCall(dst, f.state == xAfterFunc)
			}
			f.setBuf(t[len(matched):])
			switch matched {
			case qwenFunction:
				f.state = xName
			case qwenParameter:
				f.state = xParamName
			case qwenFunctionEnd:
				dst = f.closeArgs(p, dst)
				f.state = xAfterFunc
			}
		case xName, xParamName:
			i := strings.IndexByte(b, '>')
			if i < 0 {
				if len(b) > maxHeaderLen {
					return p.breakCall(dst, false)
				}
				return dst
			}
			f.setBuf(b[i+1:])
			if f.state == xName {
				if !validFunctionName(b[:i]) {
					return p.breakCall(dst, false)
				}
				f.name = b[:i]
				f.state = xBody
				dst = p.beginCall(dst, f.name, "")
			} else {
				f.key = b[:i]
				f.state = xValue
				f.scanned = 0
				f.streaming = f.schemas.qwenStreams(f.name, f.key)
				f.lead = true
				if f.streaming {
					dst = f.paramStart(p, dst)
					dst = p.args(dst, "\"")
				}
			}
		case xValue:
			i, structural := f.valueEnd(b)
			switch {
			case structural:
				if f.streaming {
					dst = f.endStream(p, dst, b[:i])
				} else {
					dst = f.param(p, dst, b[:i])
				}
				f.setBuf(b[i+len(qwenParameterEnd):])
				f.scanned = 0
				f.state = xBody
			case f.streaming:
				limit := len(b)
				if i >= 0 {
					limit = i // hold from the undecided </parameter> on
				}
				return f.streamValue(p, dst, b, limit)
			default:
				return dst
			}
		default:
			return dst
		}
	}
}

func (f *xmlFormat) setBuf(s string) {
	f.buf.Reset()
	f.buf.WriteString(s)
}

// glmText handles text between GLM's markers.
func (f *xmlFormat) glmText(p *FamilyParser, dst []Piece) []Piece {
	b := f.buf.String()
	switch f.state {
	case xName:
		if i := strings.IndexByte(b, '\n'); i >= 0 {
			rest := b[i+1:]
			f.setBuf(b[:i])
			if dst = f.glmName(p, dst); !p.callOpen {
				return dst
			}
			b = rest
			f.buf.Reset()
		} else {
			if len(b) > maxHeaderLen {
				return p.breakCall(dst, false)
			}
			return dst
		}
		fallthrough
	case xBody, xAfterKey:
		if strings.TrimSpace(b) != "" {
			return p.breakCall(dst, false)
		}
		f.buf.Reset()
	case xValue:
		if !f.streaming {
			return dst
		}
		if f.lead {
			if b = strings.TrimLeftFunc(b, pyIsSpace); b == "" {
				f.buf.Reset()
				return dst
			}
			f.lead = false
		}
		body := strings.TrimRightFunc(b, pyIsSpace)
		if body != "" {
			q := pyQuote(body)
			dst = p.args(dst, q[1:len(q)-1])
		}
		f.setBuf(b[len(body):])
	}
	return dst
}

// pyIsSpace is Python's str.isspace for one character (unicode.IsSpace plus
// the ASCII separators U+001C–U+001F).
func pyIsSpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// pyStrip is Python's str.strip() without arguments.
func pyStrip(s string) string { return strings.TrimFunc(s, pyIsSpace) }

// glmIsString reports whether a GLM parameter's schema type is "string"
// (vLLM's _is_string_type): its value is the stripped text.
func (ts toolSchemas) glmIsString(tool, param string) bool {
	ps, ok := ts[tool][param]
	return ok && ps.rawType == "string"
}

func (f *xmlFormat) finish(p *FamilyParser, dst []Piece, end int) []Piece {
	if f.style == styleQwenCoder && f.state == xAfterFunc && p.callOpen {
		dst = p.endCall(dst, end, false, "")
		p.exitRegion(end)
		return dst
	}
	if p.callOpen {
		dst = p.endCall(dst, end, true, "")
		p.exitRegion(end)
		return dst
	}
	return p.breakCall(dst, false)
}

// toolSchemas holds each tool's parameter schemas for value conversion.
type toolSchemas map[string]map[string]paramSchema

// paramSchema is what vLLM's conversions read of a parameter's schema.
type paramSchema struct {
	typ       string // "type" (lower-cased, as qwen3_coder compares it), "" when absent
	rawType   string // "type" as written (GLM compares it exactly)
	anyOfType string // the first non-null type of anyOf
	hasAnyOf  bool
	nullable  bool
}

func parseSchemas(tools []ToolSchema) toolSchemas {
	out := toolSchemas{}
	for _, t := range tools {
		var params struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if len(t.Parameters) == 0 || json.Unmarshal(t.Parameters, &params) != nil || params.Properties == nil {
			if _, ok := out[t.Name]; !ok {
				out[t.Name] = nil
			}
			continue
		}
		props := map[string]paramSchema{}
		for k, raw := range params.Properties {
			var ps paramSchema
			var sch struct {
				Type  json.RawMessage   `json:"type"`
				AnyOf []json.RawMessage `json:"anyOf"`
			}
			if json.Unmarshal(raw, &sch) == nil {
				ps.rawType = typeString(sch.Type)
				ps.typ = strings.ToLower(strings.TrimSpace(ps.rawType))
				if sch.AnyOf != nil {
					ps.hasAnyOf = true
					ps.anyOfType = "string"
					picked := false
					for _, o := range sch.AnyOf {
						var opt struct {
							Type json.RawMessage `json:"type"`
						}
						if json.Unmarshal(o, &opt) != nil || opt.Type == nil {
							continue
						}
						ot := strings.ToLower(strings.TrimSpace(typeString(opt.Type)))
						if ot == "null" {
							ps.nullable = true
						} else if !picked {
							ps.anyOfType, picked = ot, true
						}
					}
				}
			}
			props[k] = ps
		}
		if _, ok := out[t.Name]; !ok {
			out[t.Name] = props
		}
	}
	return out
}

// typeString renders a "type" value as Python's str() would: a string as
// is; anything else (a list of types) as its JSON text, which matches no
// known type name, as in vLLM.
func typeString(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// qwenStreams reports whether qwenValue returns the value as a JSON string
// whatever it is, so it can stream as written.
func (ts toolSchemas) qwenStreams(tool, param string) bool {
	ps, ok := ts[tool][param]
	if !ok {
		return true
	}
	typ, nullable := "string", false
	switch {
	case ps.rawType != "":
		typ, nullable = ps.typ, ps.typ == "null"
	case ps.hasAnyOf:
		typ, nullable = ps.anyOfType, ps.nullable
	}
	switch typ {
	case "string", "str", "text", "varchar", "char", "enum":
		return !nullable
	}
	return false
}

// qwenValue converts a qwen3_coder parameter value as vLLM's
// Qwen3CoderToolParser._convert_param_value does and returns its JSON.
func (ts toolSchemas) qwenValue(tool, param, v string) string {
	props := ts[tool]
	ps, ok := props[param]
	if !ok {
		return pyQuote(v)
	}
	typ := "string"
	nullable := false
	switch {
	case ps.rawType != "":
		typ = ps.typ
		nullable = typ == "null"
	case ps.hasAnyOf:
		typ = ps.anyOfType
		nullable = ps.nullable
	}
	lower := strings.ToLower(v)
	if nullable && (lower == "null" || lower == "none") {
		return "null"
	}
	switch typ {
	case "string", "str", "text", "varchar", "char", "enum":
		return pyQuote(v)
	}
	if lower == "null" || lower == "none" {
		return "null"
	}
	switch {
	case strings.HasPrefix(typ, "int") || strings.HasPrefix(typ, "uint") || strings.HasPrefix(typ, "long") ||
		strings.HasPrefix(typ, "short") || strings.HasPrefix(typ, "unsigned"):
		if out, ok := pyInt(v); ok {
			return out
		}
		return pyQuote(v)
	case strings.HasPrefix(typ, "num") || strings.HasPrefix(typ, "float"):
		if out, ok := pyNumberFloat(v); ok {
			return out
		}
		return pyQuote(v)
	case typ == "boolean" || typ == "bool" || typ == "binary":
		if lower == "true" {
			return "true"
		}
		return "false"
	}
	container := typ == "object" || typ == "array" || typ == "arr" || strings.HasPrefix(typ, "dict") || strings.HasPrefix(typ, "list")
	if container {
		if out, sv, isStr, ok := pyJSONLoadsDumps(v); ok {
			if isStr {
				if out2, _, _, ok := pyLiteralDumps(sv); ok {
					return out2
				}
			}
			return out
		}
	}
	out, sv, isStr, ok := pyLiteralDumps(v)
	if !ok {
		return pyQuote(v)
	}
	if container && isStr {
		if out2, _, _, ok := pyLiteralDumps(sv); ok {
			return out2
		}
	}
	return out
}

// glmValue converts a GLM argument value as vLLM's Glm4MoeModelToolParser
// does: a "string"-typed parameter stays a string; anything else is
// json.loads, else ast.literal_eval, else the string.
func (ts toolSchemas) glmValue(tool, param, v string) string {
	if ts.glmIsString(tool, param) {
		return pyQuote(v)
	}
	if out, _, _, ok := pyJSONLoadsDumps(v); ok {
		return out
	}
	if out, _, _, ok := pyLiteralDumps(v); ok {
		return out
	}
	return pyQuote(v)
}
