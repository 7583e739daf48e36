package stream

import (
	"strings"
)

// markerKind is the role of a marker token in a family's output format.
type markerKind uint8

const (
	mkNone        markerKind = iota
	mkThinkStart             // <think>, [THINK]
	mkThinkEnd               // </think>, [/THINK]
	mkToolsBegin             // opens a tool-call region: <tool_call>, [TOOL_CALLS], <｜tool▁calls▁begin｜>, <|python_tag|>
	mkToolsEnd               // closes it: </tool_call>, <｜tool▁calls▁end｜>
	mkCallBegin              // <｜tool▁call▁begin｜>, <|tool_call_begin|>
	mkCallEnd                // <｜tool▁call▁end｜>, <|tool_call_end|>
	mkSep                    // <｜tool▁sep｜>, <|tool_call_argument_begin|>, [ARGS]
	mkCallID                 // [CALL_ID]
	mkArgKey                 // <arg_key>
	mkArgKeyEnd              // </arg_key>
	mkArgValue               // <arg_value>
	mkArgValueEnd            // </arg_value>
)

// TokenLookup finds the id of a token by its string; render/bpe's *Tokenizer
// satisfies it (TokenID).
type TokenLookup interface {
	TokenID(token string) (uint32, bool)
}

// MarkerIDs maps a marker token's string to its id in the model's tokenizer.
type MarkerIDs map[string]uint32

// FamilyOptions configures a parser built by [NewFamilyParser]. The zero
// value (plus Markers) parses with tool calls on, parallel calls off and
// reasoning not pre-opened.
type FamilyOptions struct {
	// Markers are the ids of the tool and reasoning parsers' marker tokens,
	// as [ResolveMarkers] returns them. Marker ids are never text except
	// outside their place; text that merely spells a marker is text.
	Markers MarkerIDs
	// EndOfTurn ids end the output and are not text (EOS, end-of-turn and
	// the request's stop_token_ids). Ids after one are ignored.
	EndOfTurn []uint32
	// ThinkingOpen reports that the generation prompt already opened the
	// reasoning block, so the output starts inside reasoning.
	ThinkingOpen bool
	// ParallelToolCalls keeps every tool call; false keeps only the first.
	ParallelToolCalls bool
	// DisableToolCalls treats tool-call markers as text (tool_choice
	// "none", or a request without tools).
	DisableToolCalls bool
	// Tools are the request's function tools, for the families that convert
	// argument values by the parameter schema (qwen3_coder, glm45, glm47).
	Tools []ToolSchema
	// Prefill are ids the prompt ends with that the output continues (the
	// forced tool-call prefix of [ForcedToolChoice]). They are parsed as if
	// generated but not counted: token indexes still start at 0 with the
	// first Append, and the items they open start at index 0.
	Prefill []uint32
}

// famMode is what the FamilyParser is reading.
type famMode uint8

const (
	fmText famMode = iota
	fmReasoning
	fmTool
	fmEnded
)

// toolFormat reads one family's tool-call region. The FamilyParser routes
// marker ids and decoded text of the region to it; it reports calls through
// the parser's beginCall, args, endCall, breakCall and exitRegion.
type toolFormat interface {
	// reset starts a region (k is the marker that opened it, mkNone for a
	// text trigger).
	reset(p *FamilyParser, k markerKind)
	// marker handles a marker id of token idx inside the region (or the one
	// that opened it); text is its decoded text, for the region's raw text
	// (the format appends it to p.raw where it belongs to the region).
	marker(p *FamilyParser, dst []Piece, k markerKind, text string, idx int) []Piece
	// text handles decoded text of token idx inside the region.
	text(p *FamilyParser, dst []Piece, s string, idx int) []Piece
	// finish handles the end of output inside the region.
	finish(p *FamilyParser, dst []Piece, end int) []Piece
}

// FamilyParser parses one turn of a model family's output: optional
// reasoning, message text and tool calls in the format of one of vLLM's tool
// parsers ([ToolParserSpec]). It implements [OutputParser].
//
// Text rules (those the Qwen3 chat template applies when it renders
// history): reasoning is stripped of leading and trailing newlines; message
// text of leading newlines, and of trailing newlines before a tool call; a
// segment that is only newlines produces no item.
//
// Tool calls: a call begins (PieceToolCall) once its name is known and its
// arguments have started; argument deltas concatenate to the JSON text the
// model wrote (converted to JSON where the family writes XML or Python call
// syntax). A call that is malformed before it begins becomes message text,
// its markers' text included. A call that breaks after it began ends
// Incomplete: the rest of its text is dropped up to the format's closing
// marker (or the end of output where the format has none), never message
// text, and [FamilyParser.Malformed] reports it.
//
// A FamilyParser is not safe for concurrent use.
type FamilyParser struct {
	dec     TokenDecoder
	opts    FamilyOptions
	markers []idKind
	format  toolFormat
	closer  markerKind // the marker that ends a broken call's region; mkNone: the end of output
	trigger byte       // a text byte that opens the region at the start of the message ('{', '['); 0: none
	reason  *reasoningRule

	mode      famMode
	n         int
	pending   []Piece
	seg       segment
	thinkOK   bool // the reasoning start marker may still open reasoning
	triggerOK bool // the text trigger may still open the region

	regionStart int
	raw         []byte // text of the region since its start or the last call's end
	callOpen    bool
	callStart   int
	callID      string
	suppress    bool
	calls       int
	broken      bool
	brokenOK    bool // the broken call's arguments were whole
	malformed   bool

	drop     string // message text the reasoning parser removes ("(no content)")
	dropHeld string // text that may be the start of drop
}

type idKind struct {
	id   uint32
	kind markerKind
}

var _ OutputParser = (*FamilyParser)(nil)

// Ended reports whether an end-of-turn id was seen (or Finish was called).
func (p *FamilyParser) Ended() bool { return p.mode == fmEnded }

// Malformed reports that a tool call broke after it began: it ended
// Incomplete, and the caller should end the response incomplete rather than
// completed (issue 16 item 2).
func (p *FamilyParser) Malformed() bool { return p.malformed }

func (p *FamilyParser) kind(id uint32) markerKind {
	for _, m := range p.markers {
		if m.id == id {
			return m.kind
		}
	}
	return mkNone
}

func (p *FamilyParser) isEndOfTurn(id uint32) bool {
	for _, e := range p.opts.EndOfTurn {
		if id == e {
			return true
		}
	}
	return false
}

// Append consumes one generated id and appends the pieces it produces to dst.
func (p *FamilyParser) Append(dst []Piece, id uint32) []Piece {
	if len(p.pending) > 0 {
		dst = append(dst, p.pending...)
		p.pending = nil
	}
	idx := p.n
	p.n++
	return p.step(dst, id, idx)
}

// Finish ends the output and appends the pieces that close what is open.
func (p *FamilyParser) Finish(dst []Piece) []Piece {
	if len(p.pending) > 0 {
		dst = append(dst, p.pending...)
		p.pending = nil
	}
	if p.mode == fmEnded {
		return dst
	}
	return p.finish(dst, p.n)
}

func (p *FamilyParser) step(dst []Piece, id uint32, idx int) []Piece {
	if p.mode == fmEnded {
		return dst
	}
	if p.isEndOfTurn(id) {
		return p.finish(dst, idx)
	}
	k := p.kind(id)
	switch p.mode {
	case fmReasoning:
		if k == mkThinkStart && !p.seg.open && p.seg.held == "" {
			// The prompt opened reasoning and the model opened it again
			// (DeepSeek-R1 outputs that start with <think>).
			dst = p.flushDecoder(dst, idx)
			p.dec.Next(id)
			return dst
		}
		if k == mkThinkEnd {
			dst = p.flushDecoder(dst, idx)
			p.dec.Next(id)
			dst = p.closeSegment(dst, idx+1, false)
			p.mode = fmText
			p.seg = segment{start: idx + 1, leading: true}
			p.triggerOK = p.trigger != 0 && p.calls == 0
			return dst
		}
	case fmText:
		if k != mkNone && p.dropHeld != "" {
			dst = p.flushDecoder(dst, idx)
			dst = p.flushDrop(dst)
		}
		switch {
		case k == mkThinkStart && p.thinkOK && p.reason != nil:
			dst = p.flushDecoder(dst, idx)
			if p.mode == fmText && p.thinkOK {
				p.dec.Next(id)
				p.mode = fmReasoning
				p.thinkOK = false
				p.seg = segment{start: idx, leading: true}
				return dst
			}
		case p.format != nil && !p.opts.DisableToolCalls && p.opens(k):
			dst = p.flushDecoder(dst, idx)
			if p.mode == fmText {
				p.enterRegion(idx, k)
				return p.format.marker(p, dst, k, p.dec.Next(id), idx)
			}
		}
	case fmTool:
		// Reasoning markers inside a call are text (a JSON string may hold
		// one), as in [Parser].
		if k != mkNone && k != mkThinkStart && k != mkThinkEnd {
			dst = p.flushDecoder(dst, idx)
			if p.mode != fmTool {
				break
			}
			marker := p.dec.Next(id)
			if p.broken {
				switch {
				case k == p.closer:
					dst = p.closeBroken(dst, idx+1)
				case p.opens(k):
					// A new call starts: the broken one ends here.
					dst = p.closeBroken(dst, idx)
					p.enterRegion(idx, k)
					return p.format.marker(p, dst, k, marker, idx)
				}
				return dst
			}
			return p.format.marker(p, dst, k, marker, idx)
		}
	}
	return p.text(dst, p.dec.Next(id), idx)
}

// opens reports whether marker k opens a tool-call region.
func (p *FamilyParser) opens(k markerKind) bool {
	return k == mkToolsBegin || k == mkCallBegin
}

func (p *FamilyParser) enterRegion(idx int, k markerKind) {
	p.thinkOK, p.triggerOK = false, false
	p.mode = fmTool
	p.regionStart = idx
	p.callStart = idx
	p.raw = p.raw[:0]
	p.callOpen, p.broken = false, false
	p.format.reset(p, k)
}

func (p *FamilyParser) finish(dst []Piece, end int) []Piece {
	dst = p.flushDecoder(dst, end)
	if p.mode == fmText {
		dst = p.flushDrop(dst)
	}
	switch p.mode {
	case fmTool:
		if p.broken {
			dst = p.closeBroken(dst, end)
		} else {
			dst = p.format.finish(p, dst, end)
		}
		if p.mode == fmText {
			dst = p.closeSegment(dst, end, true)
		}
	case fmReasoning:
		dst = p.closeSegment(dst, end, false)
	case fmText:
		dst = p.closeSegment(dst, end, true)
	}
	p.mode = fmEnded
	return dst
}

// flushDecoder routes text the decoder holds to the current mode; the id at
// idx cut it, so it belongs to the id before.
func (p *FamilyParser) flushDecoder(dst []Piece, idx int) []Piece {
	if s := p.dec.Flush(); s != "" {
		dst = p.text(dst, s, max(idx-1, 0))
	}
	return dst
}

// text routes decoded text produced by token idx.
func (p *FamilyParser) text(dst []Piece, s string, idx int) []Piece {
	if s == "" {
		return dst
	}
	switch p.mode {
	case fmReasoning:
		return p.segmentText(dst, s, PieceReasoning)
	case fmTool:
		if p.broken {
			return dst
		}
		p.raw = append(p.raw, s...)
		return p.format.text(p, dst, s, idx)
	case fmText:
		if p.thinkOK || p.triggerOK {
			body := strings.TrimLeft(s, " \t\r\n")
			if body == "" {
				// Whitespace before a possible reasoning block or tool
				// call: hold it (dropped if either opens).
				if p.seg.leading {
					s = strings.TrimLeft(s, "\n")
				}
				if s != "" {
					p.seg.held += s
					p.seg.leading = false
				}
				return dst
			}
			p.thinkOK = false
			if p.triggerOK && p.format != nil && !p.opts.DisableToolCalls && body[0] == p.trigger {
				p.triggerOK = false
				p.enterRegion(idx, mkNone)
				p.seg.held = ""
				p.raw = append(p.raw, body...)
				return p.format.text(p, dst, body, idx)
			}
			p.triggerOK = false
		}
		return p.messageText(dst, s)
	}
	return dst
}

// messageText emits message text, removing the reasoning parser's
// placeholder (Kimi K2's "(no content)", as vLLM's KimiK2ReasoningParser
// does) and holding a tail that may be its start.
func (p *FamilyParser) messageText(dst []Piece, s string) []Piece {
	if p.drop == "" {
		return p.segmentText(dst, s, PieceText)
	}
	s = strings.ReplaceAll(p.dropHeld+s, p.drop, "")
	hold := 0
	for k := min(len(s), len(p.drop)-1); k > 0; k-- {
		if strings.HasPrefix(p.drop, s[len(s)-k:]) {
			hold = k
			break
		}
	}
	p.dropHeld = s[len(s)-hold:]
	if s = s[:len(s)-hold]; s == "" {
		return dst
	}
	return p.segmentText(dst, s, PieceText)
}

// flushDrop emits held text that did not become the placeholder.
func (p *FamilyParser) flushDrop(dst []Piece) []Piece {
	if p.dropHeld == "" {
		return dst
	}
	s := p.dropHeld
	p.dropHeld = ""
	return p.segmentText(dst, s, PieceText)
}

// segmentText emits text of the current segment (segment.text).
func (p *FamilyParser) segmentText(dst []Piece, s string, kind PieceKind) []Piece {
	return p.seg.text(dst, s, kind)
}

// closeSegment ends the current text or reasoning segment at token index
// end; keepHeld emits held trailing newlines (message text at the end).
func (p *FamilyParser) closeSegment(dst []Piece, end int, keepHeld bool) []Piece {
	return p.seg.close(dst, end, p.mode == fmReasoning, keepHeld)
}

// markCall sets the token index the next call starts at.
func (p *FamilyParser) markCall(idx int) {
	if !p.callOpen {
		// Never before the end of the previous call: one token can end a
		// call and start the next.
		p.callStart = max(p.callStart, idx)
	}
}

// beginCall begins a call named name (callID: the id the model wrote, or "").
func (p *FamilyParser) beginCall(dst []Piece, name, callID string) []Piece {
	if p.callOpen {
		return dst
	}
	if p.mode == fmTool && p.seg.open {
		dst = p.closeSegment(dst, min(p.callStart, p.regionStart), false)
	} else {
		p.seg = segment{start: p.callStart, leading: true}
	}
	p.callOpen = true
	p.callID = callID
	p.suppress = p.calls > 0 && !p.opts.ParallelToolCalls
	p.calls++
	if !p.suppress {
		dst = append(dst, Piece{Kind: PieceToolCall, Text: name, CallID: callID})
	}
	return dst
}

// args appends an arguments delta of the open call.
func (p *FamilyParser) args(dst []Piece, s string) []Piece {
	if !p.callOpen || p.suppress || s == "" {
		return dst
	}
	if n := len(dst); n > 0 && dst[n-1].Kind == PieceArguments {
		dst[n-1].Text += s
		return dst
	}
	return append(dst, Piece{Kind: PieceArguments, Text: s})
}

// endCall ends the open call at token index end.
func (p *FamilyParser) endCall(dst []Piece, end int, incomplete bool, callID string) []Piece {
	if !p.callOpen {
		return dst
	}
	p.callOpen = false
	if callID == "" {
		callID = p.callID
	}
	if !p.suppress {
		pc := Piece{Kind: PieceToolCallDone, Start: p.callStart, End: end, Incomplete: incomplete}
		if callID != p.callID {
			pc.CallID = callID
		}
		dst = append(dst, pc)
	}
	p.callStart = end
	p.raw = p.raw[:0]
	return dst
}

// breakCall handles output that breaks the format inside the region. No
// call open: the region's text since its start (or the last call) becomes
// message text and the region ends. A call open: it breaks; the rest of the
// region is dropped up to the closer, and the call ends Incomplete unless
// whole reports its arguments were already complete.
func (p *FamilyParser) breakCall(dst []Piece, whole bool) []Piece {
	if !p.callOpen {
		raw := string(p.raw)
		p.raw = p.raw[:0]
		return p.exitRegionText(dst, raw)
	}
	p.broken = true
	p.brokenOK = whole
	if !whole && !p.suppress {
		p.malformed = true
	}
	return dst
}

func (p *FamilyParser) closeBroken(dst []Piece, end int) []Piece {
	dst = p.endCall(dst, end, !p.brokenOK, "")
	p.broken = false
	p.exitRegion(end)
	return dst
}

// exitRegion leaves the tool-call region; message text starts at end, or
// the message before the region continues when the region held no call.
func (p *FamilyParser) exitRegion(end int) {
	p.mode = fmText
	if !p.seg.open {
		p.seg = segment{start: end, leading: true}
	}
}

// exitRegionText leaves the region and continues the message with s (the
// region's own text when it was not a call).
func (p *FamilyParser) exitRegionText(dst []Piece, s string) []Piece {
	p.mode = fmText
	if !p.seg.open && p.calls > 0 {
		p.seg = segment{start: p.callStart}
	}
	p.seg.leading = false
	if s == "" {
		return dst
	}
	return p.segmentText(dst, s, PieceText)
}
