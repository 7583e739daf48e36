package stream

import "strings"

// jsonStyle selects the JSON-object tool-call format.
type jsonStyle uint8

const (
	// styleHermes: <tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>
	// (vllm/tool_parsers/hermes_tool_parser.py).
	styleHermes jsonStyle = iota
	// styleLlama: a bare {"name": …, "parameters"|"arguments": {…}} at the
	// start of the message, optionally after <|python_tag|>, several
	// separated by ";" (vllm/tool_parsers/llama_tool_parser.py).
	styleLlama
)

type jsonObjState uint8

const (
	joObject  jsonObjState = iota // inside (or before) a call object
	joAfter                       // after a complete object (llama: ";" may follow)
	joBetween                     // after ";" (llama)
)

// jsonObjectFormat reads calls written as one JSON object each, streaming
// the bytes of its arguments object verbatim.
type jsonObjectFormat struct {
	style jsonStyle
	state jsonObjState
	call  hermesCall
	begun bool
	buf   []byte
}

func (f *jsonObjectFormat) reset(p *FamilyParser, k markerKind) {
	f.state = joObject
	f.newCall()
}

func (f *jsonObjectFormat) newCall() {
	f.call.reset()
	f.call.parameters = f.style == styleLlama
	f.begun = false
}

func (f *jsonObjectFormat) marker(p *FamilyParser, dst []Piece, k markerKind, text string, idx int) []Piece {
	switch {
	case k == mkToolsBegin && idx == p.regionStart && len(p.raw) == 0:
		p.raw = append(p.raw, text...) // the marker that opened the region
		return dst
	case f.style == styleHermes && k == mkToolsBegin:
		// A new <tool_call> inside a call: the open one ends there, a call
		// that never began is message text, and a new region starts.
		dst = f.closeOpen(p, dst, idx)
		p.enterRegion(idx, k)
		p.raw = append(p.raw, text...)
		return dst
	case f.style == styleHermes && k == mkToolsEnd:
		if p.callOpen {
			dst = p.endCall(dst, idx+1, !f.call.usable(), "")
			p.exitRegion(idx + 1)
			return dst
		}
		p.raw = append(p.raw, text...)
		return p.breakCall(dst, false)
	case f.style == styleLlama && k == mkToolsBegin && f.state != joObject:
		return dst // <|python_tag|> between calls
	}
	p.raw = append(p.raw, text...)
	if p.callOpen {
		return p.breakCall(dst, f.call.usable())
	}
	return p.breakCall(dst, false)
}

// closeOpen ends the open call at idx or turns the region's text into
// message text.
func (f *jsonObjectFormat) closeOpen(p *FamilyParser, dst []Piece, idx int) []Piece {
	if p.callOpen {
		dst = p.endCall(dst, idx, !f.call.usable(), "")
		p.exitRegion(idx)
		return dst
	}
	return p.breakCall(dst, false)
}

func (f *jsonObjectFormat) text(p *FamilyParser, dst []Piece, s string, idx int) []Piece {
	f.buf = f.buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch f.state {
		case joAfter, joBetween:
			if isSpace(c) {
				continue
			}
			if c == ';' && f.state == joAfter {
				f.state = joBetween
				continue
			}
			if c == '{' {
				f.state = joObject
				f.newCall()
				p.markCall(idx)
				p.raw = append(p.raw[:0], s[i:]...)
				break
			}
			// Text after the calls: the message continues.
			return p.exitRegionText(dst, strings.TrimLeft(s[i:], " \t\r\n"))
		}
		isArg, ok := f.call.step(c)
		if !ok {
			dst = f.flush(p, dst)
			if f.style == styleHermes || p.callOpen {
				return p.breakCall(dst, f.call.usable())
			}
			return p.breakCall(dst, false)
		}
		if !f.begun {
			if f.call.hasName && len(f.call.args) > 0 {
				f.begun = true
				dst = p.beginCall(dst, f.call.name, "")
				f.buf = append(f.buf, f.call.args...)
			}
		} else if isArg {
			f.buf = append(f.buf, c)
		}
		if f.call.complete() && f.style == styleLlama {
			dst = f.flush(p, dst)
			dst = p.endCall(dst, idx+1, false, "")
			f.state = joAfter
		}
	}
	return f.flush(p, dst)
}

func (f *jsonObjectFormat) flush(p *FamilyParser, dst []Piece) []Piece {
	if len(f.buf) > 0 {
		dst = p.args(dst, string(f.buf))
		f.buf = f.buf[:0]
	}
	return dst
}

func (f *jsonObjectFormat) finish(p *FamilyParser, dst []Piece, end int) []Piece {
	if f.state != joObject {
		p.exitRegion(end)
		return dst
	}
	if p.callOpen {
		dst = p.endCall(dst, end, !f.call.usable(), "")
		p.exitRegion(end)
		return dst
	}
	return p.breakCall(dst, false)
}

type mistralState uint8

const (
	msStart     mistralState = iota // after [TOOL_CALLS]
	msArray                         // in [ … ], before an object
	msObject                        // inside an object of the array
	msArrAfter                      // after an object of the array
	msDone                          // after the array's ]
	msName                          // v11+: the function name
	msID                            // after [CALL_ID]
	msArgsPre                       // after [ARGS]
	msArgs                          // the arguments object
	msAfterArgs                     // after it
)

// mistralFormat reads Mistral's two forms (vllm/tool_parsers/mistral_tool_parser.py):
// [TOOL_CALLS][{"name": …, "arguments": {…}, "id": "…"}, …] (pre-v11
// tokenizers, Nemo) and [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{…} or
// [TOOL_CALLS]NAME{…} per call (v11+, Small 3.2).
type mistralFormat struct {
	state mistralState
	call  hermesCall
	begun bool
	name  strings.Builder
	id    strings.Builder
	val   jsonScanner
	buf   []byte
}

const maxHeaderLen = 1024

func (f *mistralFormat) reset(p *FamilyParser, k markerKind) {
	f.state = msStart
	f.begun = false
}

func (f *mistralFormat) marker(p *FamilyParser, dst []Piece, k markerKind, text string, idx int) []Piece {
	switch {
	case k == mkToolsBegin && idx == p.regionStart && len(p.raw) == 0:
		p.raw = append(p.raw, text...)
		return dst
	case k == mkToolsBegin && (f.state == msAfterArgs || f.state == msDone):
		p.markCall(idx)
		p.raw = append(p.raw[:0], text...)
		f.state = msStart
		f.begun = false
		return dst
	case k == mkCallID && f.state == msName:
		f.state = msID
		p.raw = append(p.raw, text...)
		return dst
	case k == mkSep && (f.state == msName || f.state == msID):
		f.state = msArgsPre
		p.raw = append(p.raw, text...)
		return dst
	case k == mkToolsBegin && f.state == msArgs && p.callOpen:
		// The next call starts before this one's arguments closed.
		dst = p.endCall(dst, idx, true, "")
		p.malformed = true
		p.markCall(idx)
		p.raw = append(p.raw[:0], text...)
		f.state = msStart
		f.begun = false
		return dst
	}
	p.raw = append(p.raw, text...)
	if f.state == msObject {
		dst = f.flush(p, f.announce(p, dst))
	}
	return p.breakCall(dst, f.whole())
}

// announce begins the JSON form's call whose announcement waits for its id, once the object
// is known to be a call (name and arguments begun) — at the latest where it breaks or ends —
// with the arguments read so far.
func (f *mistralFormat) announce(p *FamilyParser, dst []Piece) []Piece {
	if f.begun || f.state != msObject || !f.call.hasName || len(f.call.args) == 0 {
		return dst
	}
	f.begun = true
	dst = p.beginCall(dst, f.call.name, f.call.id)
	f.buf = append(f.buf, f.call.args...)
	return dst
}

func (f *mistralFormat) whole() bool {
	switch f.state {
	case msObject:
		return f.call.usable()
	case msArgs:
		return f.val.complete()
	}
	return false
}

func (f *mistralFormat) text(p *FamilyParser, dst []Piece, s string, idx int) []Piece {
	f.buf = f.buf[:0]
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch f.state {
		case msStart:
			if isSpace(c) {
				continue
			}
			if c == '[' {
				f.state = msArray
				continue
			}
			f.state = msName
			f.name.Reset()
			f.id.Reset()
			i--
		case msArray, msArrAfter:
			if isSpace(c) {
				continue
			}
			if f.state == msArray && c == '{' {
				f.state = msObject
				f.call.reset()
				f.begun = false
				if p.calls > 0 || p.callStart != p.regionStart {
					p.markCall(idx)
				}
				i--
				continue
			}
			if f.state == msArrAfter && c == ',' {
				f.state = msArray
				continue
			}
			if f.state == msArrAfter && c == ']' {
				f.state = msDone
				continue
			}
			dst = f.flush(p, dst)
			return p.breakCall(dst, false)
		case msObject:
			isArg, ok := f.call.step(c)
			if !ok {
				dst = f.announce(p, dst)
				dst = f.flush(p, dst)
				return p.breakCall(dst, f.call.usable())
			}
			if !f.begun {
				// Nemo writes its call id after the arguments: the call is announced once
				// the id is known (or the object ends without one), so output_item.added
				// carries the call_id the call keeps to the end (issue 33).
				if f.call.hasName && len(f.call.args) > 0 && (f.call.id != "" || f.call.complete()) {
					dst = f.announce(p, dst)
				}
			} else if isArg {
				f.buf = append(f.buf, c)
			}
			if f.call.complete() {
				dst = f.flush(p, dst)
				dst = p.endCall(dst, idx+1, false, f.call.id)
				f.state = msArrAfter
			}
		case msDone, msAfterArgs:
			if isSpace(c) {
				continue
			}
			dst = f.flush(p, dst)
			return p.exitRegionText(dst, s[i:])
		case msName, msID, msArgsPre:
			if c == '{' {
				name := strings.TrimSpace(f.name.String())
				if name == "" || strings.ContainsAny(name, " \t\r\n") {
					return p.breakCall(dst, false)
				}
				f.state = msArgs
				f.val.reset()
				dst = p.beginCall(dst, name, strings.TrimSpace(f.id.String()))
				i--
				continue
			}
			if f.state == msArgsPre {
				if isSpace(c) {
					continue
				}
				return p.breakCall(dst, false)
			}
			b := &f.name
			if f.state == msID {
				b = &f.id
			}
			if b.Len() >= maxHeaderLen {
				return p.breakCall(dst, false)
			}
			b.WriteByte(c)
		case msArgs:
			r := f.val.step(c)
			if r == scanSyntaxErr {
				dst = f.flush(p, dst)
				return p.breakCall(dst, false)
			}
			if r == scanEndBefore { // cannot happen for an object
				dst = f.flush(p, dst)
				return p.breakCall(dst, false)
			}
			if f.buf = append(f.buf, c); r == scanEnd {
				dst = f.flush(p, dst)
				dst = p.endCall(dst, idx+1, false, "")
				f.state = msAfterArgs
			}
		}
	}
	return f.flush(p, dst)
}

func (f *mistralFormat) flush(p *FamilyParser, dst []Piece) []Piece {
	if len(f.buf) > 0 {
		dst = p.args(dst, string(f.buf))
		f.buf = f.buf[:0]
	}
	return dst
}

func (f *mistralFormat) finish(p *FamilyParser, dst []Piece, end int) []Piece {
	if f.state == msDone || f.state == msAfterArgs || f.state == msArrAfter {
		p.exitRegion(end)
		return dst
	}
	dst = f.flush(p, f.announce(p, dst))
	if p.callOpen {
		dst = p.endCall(dst, end, !f.whole(), f.call.id)
		p.exitRegion(end)
		return dst
	}
	return p.breakCall(dst, false)
}
