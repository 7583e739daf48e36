package stream

import (
	"strings"
)

// sectionStyle selects the marker-delimited section format.
type sectionStyle uint8

const (
	// styleDeepSeekV3: <｜tool▁calls▁begin｜><｜tool▁call▁begin｜>TYPE<｜tool▁sep｜>NAME\n```json\n{…}\n```<｜tool▁call▁end｜>…<｜tool▁calls▁end｜>
	// (vllm/tool_parsers/deepseekv3_tool_parser.py).
	styleDeepSeekV3 sectionStyle = iota
	// styleDeepSeekV31: <｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}<｜tool▁call▁end｜>
	// (vllm/tool_parsers/deepseekv31_tool_parser.py).
	styleDeepSeekV31
	// styleKimi: <|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{…}<|tool_call_end|>…<|tool_calls_section_end|>
	// (vllm/tool_parsers/kimi_k2_tool_parser.py); the id is the call id.
	styleKimi
)

type sectionState uint8

const (
	ssWait     sectionState = iota // between calls: a call-begin marker or the section end
	ssHeader                       // before the separator: name (v3.1), type (v3), call id (Kimi)
	ssName                         // v3: the name line after the separator
	ssFence                        // v3: "```json\n"
	ssArgs                         // the arguments JSON
	ssArgsDone                     // after it (v3: "\n```")
)

const v3Fence = "```json\n"

// sectionFormat reads the DeepSeek and Kimi tool-call sections, streaming the
// arguments as the model wrote them (vLLM passes that text through).
type sectionFormat struct {
	style   sectionStyle
	state   sectionState
	hdr     strings.Builder
	name    string
	callID  string
	fence   int // bytes of the fence matched
	val     jsonScanner
	started bool
	buf     []byte
	ncalls  int // calls started in this region
}

func (f *sectionFormat) reset(p *FamilyParser, k markerKind) {
	f.state = ssWait
	f.ncalls = 0
}

func (f *sectionFormat) newCall() {
	f.state = ssHeader
	f.hdr.Reset()
	f.name, f.callID = "", ""
	f.fence = 0
	f.started = false
	f.val.reset()
}

func (f *sectionFormat) complete() bool {
	if f.style == styleDeepSeekV3 {
		return f.state == ssArgsDone && f.fence == 3
	}
	return f.started && f.val.complete()
}

func (f *sectionFormat) marker(p *FamilyParser, dst []Piece, k markerKind, text string, idx int) []Piece {
	p.raw = append(p.raw, text...)
	switch k {
	case mkToolsBegin:
		if f.state == ssWait && idx == p.regionStart {
			return dst
		}
	case mkCallBegin:
		if f.state == ssWait {
			if f.ncalls > 0 {
				p.markCall(idx) // the first call owns the section's begin marker
			}
			f.ncalls++
			f.newCall()
			return dst
		}
	case mkSep:
		if f.state == ssHeader {
			h := strings.TrimSpace(f.hdr.String())
			switch f.style {
			case styleDeepSeekV3:
				f.state = ssName
				f.hdr.Reset()
				return dst
			case styleDeepSeekV31:
				f.name = h
			case styleKimi:
				name, ok := kimiName(h)
				if !ok {
					return p.breakCall(dst, false)
				}
				f.name, f.callID = name, h
			}
			if f.name == "" {
				return p.breakCall(dst, false)
			}
			f.state = ssArgs
			return dst
		}
	case mkCallEnd:
		if p.callOpen {
			dst = f.flush(p, dst)
			whole := f.complete()
			if !whole && !p.suppress {
				p.malformed = true
			}
			dst = p.endCall(dst, idx+1, !whole, "")
			f.state = ssWait
			return dst
		}
	case mkToolsEnd:
		if f.state == ssWait {
			p.exitRegion(idx + 1)
			return dst
		}
		if p.callOpen {
			dst = f.flush(p, dst)
			whole := f.complete()
			if !whole && !p.suppress {
				p.malformed = true
			}
			dst = p.endCall(dst, idx+1, !whole, "")
			p.exitRegion(idx + 1)
			return dst
		}
	}
	dst = f.flush(p, dst)
	return p.breakCall(dst, f.complete())
}

// kimiName reads a Kimi call id "functions.NAME:IDX" (vLLM's regex
// `[^<]+:\d+`; the name is the id before ":" after the last ".").
func kimiName(id string) (string, bool) {
	i := strings.LastIndexByte(id, ':')
	if i <= 0 || i == len(id)-1 || strings.ContainsRune(id, '<') {
		return "", false
	}
	for _, c := range id[i+1:] {
		if c < '0' || c > '9' {
			return "", false
		}
	}
	head := id[:strings.IndexByte(id, ':')]
	name := head[strings.LastIndexByte(head, '.')+1:]
	return name, name != ""
}

func (f *sectionFormat) text(p *FamilyParser, dst []Piece, s string, idx int) []Piece {
	f.buf = f.buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch f.state {
		case ssWait:
			if isSpace(c) {
				continue
			}
			// Text between or after the calls: the region's text since the
			// last call is message text.
			dst = f.flush(p, dst)
			return p.breakCall(dst, false)
		case ssHeader, ssName:
			if f.state == ssName && c == '\n' {
				f.name = strings.TrimSpace(f.hdr.String())
				if f.name == "" {
					return p.breakCall(dst, false)
				}
				f.state = ssFence
				continue
			}
			if f.hdr.Len() >= maxHeaderLen {
				return p.breakCall(dst, false)
			}
			f.hdr.WriteByte(c)
		case ssFence:
			if c != v3Fence[f.fence] {
				return p.breakCall(dst, false)
			}
			if f.fence++; f.fence == len(v3Fence) {
				f.fence = 0
				f.state = ssArgs
			}
		case ssArgs:
			if !f.started {
				if isSpace(c) {
					continue
				}
				if c != '{' {
					return p.breakCall(dst, false)
				}
				f.started = true
				dst = p.beginCall(dst, f.name, f.callID)
			}
			r := f.val.step(c)
			if r == scanSyntaxErr || r == scanEndBefore {
				dst = f.flush(p, dst)
				return p.breakCall(dst, false)
			}
			f.buf = append(f.buf, c)
			if r == scanEnd {
				f.state = ssArgsDone
			}
		case ssArgsDone:
			if isSpace(c) && f.fence == 0 || f.fence == 3 && isSpace(c) {
				continue
			}
			if f.style == styleDeepSeekV3 && c == '`' && f.fence < 3 {
				f.fence++
				continue
			}
			dst = f.flush(p, dst)
			return p.breakCall(dst, f.complete())
		}
	}
	return f.flush(p, dst)
}

func (f *sectionFormat) flush(p *FamilyParser, dst []Piece) []Piece {
	if len(f.buf) > 0 {
		dst = p.args(dst, string(f.buf))
		f.buf = f.buf[:0]
	}
	return dst
}

func (f *sectionFormat) finish(p *FamilyParser, dst []Piece, end int) []Piece {
	if p.callOpen {
		dst = p.endCall(dst, end, !f.complete(), "")
		p.exitRegion(end)
		return dst
	}
	if f.state == ssWait && p.calls > 0 && strings.TrimSpace(string(p.raw)) == "" {
		p.exitRegion(end)
		return dst
	}
	return p.breakCall(dst, false)
}
