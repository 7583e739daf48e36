package stream

import (
	"strings"
)

// HarmonyTokens are the ids of the Harmony (gpt-oss) special tokens the parser reads. render/harmony
// declares o200k_harmony's (harmony.Token*), and package family binds them; stream does not
// import render.
type HarmonyTokens struct {
	EndOfText uint32 // <|endoftext|>
	Return    uint32 // <|return|>: end of the turn after a final answer (a stop id)
	Constrain uint32 // <|constrain|>
	Channel   uint32 // <|channel|>
	Start     uint32 // <|start|>
	End       uint32 // <|end|>: end of one message; the turn goes on
	Message   uint32 // <|message|>
	Call      uint32 // <|call|>: end of the turn with a tool call (a stop id)
}

// HarmonyOptions configures a [HarmonyParser].
type HarmonyOptions struct {
	// Tokens are the special tokens' ids. Required.
	Tokens HarmonyTokens
	// EndOfTurn are extra ids that end the output (the request's stop_token_ids). <|return|>,
	// <|call|> and <|endoftext|> always do.
	EndOfTurn []uint32
}

// maxHeaderBytes bounds one message header (role, recipient, channel, content type); a longer
// one is malformed output, not a header.
const maxHeaderBytes = 1024

// maxArgsDepth bounds the nesting the argument validator tracks.
const maxArgsDepth = 128

type harmonyState uint8

const (
	hsHeader      harmonyState = iota // reading a header, up to <|message|>
	hsContent                         // reading a message body, up to <|end|>, <|call|> or <|return|>
	hsExpectStart                     // after <|end|>: only <|start|> may follow
	hsEnded
)

type harmonyItem uint8

const (
	hiNone harmonyItem = iota
	hiReasoning
	hiText
	hiCall
)

// HarmonyParser turns gpt-oss output (the Harmony format, after a prompt ending in
// "<|start|>assistant") into [Piece]s, as vLLM's Responses server maps Harmony messages:
//
//   - analysis channel → reasoning;
//   - a recipient "functions.NAME" → a function call named NAME, whose arguments are the message
//     text streamed as written; a content type such as "<|constrain|>json" or "json" is accepted
//     and not part of them;
//   - any other recipient (a bare function name, browser.search, python …: stitch runs no
//     built-in tools) → a function call named by the whole recipient, so the client sees what
//     the model asked for (vLLM turns the built-in ones into web_search_call or mcp_call items);
//   - commentary without a recipient (a preamble), final, or no channel → message text.
//
// Message text is verbatim: Harmony has no whitespace rules. A message that produced no text
// produces no item (a tool call always does). <|end|> ends a message and the turn continues at
// the next <|start|>; <|return|>, <|call|> and <|endoftext|> end the turn.
//
// Output that breaks the format (an id other than <|start|> between messages, a header that does
// not parse or exceeds 1 KiB, a marker inside a header) makes the parser end: the open item is
// closed (a call Incomplete), later ids are ignored, and [HarmonyParser.Malformed] reports it so
// the caller ends the response incomplete instead of completed. A call whose arguments are not
// one complete JSON object, or that the output cut off before <|call|>, ends Incomplete.
//
// A HarmonyParser is not safe for concurrent use.
type HarmonyParser struct {
	opts HarmonyOptions
	dec  TokenDecoder
	n    int

	state     harmonyState
	malformed bool
	roleKnown bool // the header's role was given by the prompt ("<|start|>assistant")
	header    strings.Builder
	msgStart  int // token index of the message's first header token (or its <|start|>)

	item    harmonyItem
	hasText bool // the reasoning or text item emitted a delta
	args    argsCheck
}

var _ OutputParser = (*HarmonyParser)(nil)

// NewHarmonyParser returns a HarmonyParser that decodes text with dec (the gpt-oss tokenizer's
// decode stream). It panics if dec is nil or opts.Tokens is zero.
func NewHarmonyParser(dec TokenDecoder, opts HarmonyOptions) *HarmonyParser {
	if dec == nil {
		panic("stream: NewHarmonyParser with nil TokenDecoder")
	}
	if opts.Tokens == (HarmonyTokens{}) {
		panic("stream: NewHarmonyParser without Tokens")
	}
	return &HarmonyParser{opts: opts, dec: dec, roleKnown: true}
}

// Ended reports whether the turn ended (a stop id, Finish, or malformed output).
func (p *HarmonyParser) Ended() bool { return p.state == hsEnded }

// Malformed reports that the output broke the Harmony format; see [HarmonyParser].
func (p *HarmonyParser) Malformed() bool { return p.malformed }

func (p *HarmonyParser) endsTurn(id uint32) bool {
	switch id {
	case p.opts.Tokens.Return, p.opts.Tokens.Call, p.opts.Tokens.EndOfText:
		return true
	}
	for _, e := range p.opts.EndOfTurn {
		if id == e {
			return true
		}
	}
	return false
}

// Append consumes one generated id and appends the pieces it produces to dst.
func (p *HarmonyParser) Append(dst []Piece, id uint32) []Piece {
	idx := p.n
	p.n++
	switch p.state {
	case hsEnded:
		return dst
	case hsExpectStart:
		switch {
		case id == p.opts.Tokens.Start:
			p.state, p.roleKnown, p.msgStart = hsHeader, false, idx
			p.header.Reset()
		case p.endsTurn(id):
			p.state = hsEnded
		default:
			return p.fail(dst, idx)
		}
		return dst
	case hsHeader:
		return p.headerToken(dst, id, idx)
	}
	// hsContent
	switch {
	case id == p.opts.Tokens.End:
		dst = p.closeMessage(dst, idx+1, false)
		p.state = hsExpectStart
	case p.endsTurn(id):
		// A call ends with <|call|>; one stopped by another id was cut off.
		cut := p.item == hiCall && id != p.opts.Tokens.Call && id != p.opts.Tokens.Return
		dst = p.closeMessage(dst, idx+1, cut)
		p.state = hsEnded
	default:
		dst = p.content(dst, p.dec.Next(id))
	}
	return dst
}

// Finish ends the output without a stop id (max_tokens, an abort) and closes what is open: a
// call cut off before <|call|> ends Incomplete.
func (p *HarmonyParser) Finish(dst []Piece) []Piece {
	switch p.state {
	case hsEnded:
		return dst
	case hsContent:
		dst = p.closeMessage(dst, p.n, true)
	}
	p.state = hsEnded
	return dst
}

func (p *HarmonyParser) headerToken(dst []Piece, id uint32, idx int) []Piece {
	switch {
	case id == p.opts.Tokens.Message:
		p.header.WriteString(p.dec.Flush())
		return p.beginMessage(dst, idx)
	case id == p.opts.Tokens.Channel:
		p.header.WriteString(p.dec.Flush())
		p.header.WriteString("<|channel|>")
	case id == p.opts.Tokens.Constrain:
		p.header.WriteString(p.dec.Flush())
		p.header.WriteString("<|constrain|>")
	case id == p.opts.Tokens.Start || id == p.opts.Tokens.End || p.endsTurn(id):
		return p.fail(dst, idx)
	default:
		p.header.WriteString(p.dec.Next(id))
	}
	if p.header.Len() > maxHeaderBytes {
		return p.fail(dst, idx)
	}
	return dst
}

// beginMessage parses the header at <|message|> and opens the item it announces.
func (p *HarmonyParser) beginMessage(dst []Piece, idx int) []Piece {
	h, ok := parseHarmonyHeader(p.header.String(), p.roleKnown)
	if !ok {
		return p.fail(dst, idx)
	}
	p.state, p.hasText = hsContent, false
	switch name, isCall := p.callName(h.recipient); {
	case isCall:
		p.item = hiCall
		p.args.reset()
		dst = append(dst, Piece{Kind: PieceToolCall, Text: name})
	case h.channel == "analysis":
		p.item = hiReasoning
	default:
		p.item = hiText
	}
	return dst
}

// callName maps a recipient to the function it calls; "assistant" and "all" address no tool.
func (p *HarmonyParser) callName(recipient string) (string, bool) {
	switch {
	case recipient == "" || recipient == "all" || recipient == "assistant":
		return "", false
	case strings.HasPrefix(recipient, "functions.") && len(recipient) > len("functions."):
		return recipient[len("functions."):], true
	}
	return recipient, true
}

// content routes decoded message text.
func (p *HarmonyParser) content(dst []Piece, s string) []Piece {
	if s == "" {
		return dst
	}
	switch p.item {
	case hiCall:
		p.args.feed(s)
		return append(dst, Piece{Kind: PieceArguments, Text: s})
	case hiReasoning:
		p.hasText = true
		return append(dst, Piece{Kind: PieceReasoning, Text: s})
	default:
		p.hasText = true
		return append(dst, Piece{Kind: PieceText, Text: s})
	}
}

// closeMessage ends the open message at token index end; cut reports that the output stopped
// before the message's end marker.
func (p *HarmonyParser) closeMessage(dst []Piece, end int, cut bool) []Piece {
	dst = p.content(dst, p.dec.Flush())
	switch p.item {
	case hiCall:
		dst = append(dst, Piece{Kind: PieceToolCallDone, Start: p.msgStart, End: end, Incomplete: cut || !p.args.ok()})
	case hiReasoning:
		if p.hasText {
			dst = append(dst, Piece{Kind: PieceReasoningDone, Start: p.msgStart, End: end})
		}
	case hiText:
		if p.hasText {
			dst = append(dst, Piece{Kind: PieceTextDone, Start: p.msgStart, End: end})
		}
	}
	p.item, p.hasText = hiNone, false
	return dst
}

// fail handles output that breaks the format at token idx: the open message closes (a call
// Incomplete) and the parser ends.
func (p *HarmonyParser) fail(dst []Piece, idx int) []Piece {
	if p.state == hsContent {
		dst = p.closeMessage(dst, idx, true)
	} else {
		p.dec.Flush()
	}
	p.malformed = true
	p.state = hsEnded
	return dst
}

// harmonyHeader is a parsed message header.
type harmonyHeader struct {
	recipient, channel, contentType string
}

// parseHarmonyHeader reads a header as openai_harmony's parse_header_from_string does: the
// channel is the word after <|channel|>; a <|constrain|> marker starts a word; the role comes
// first (the prompt gave it when roleKnown); of the remaining words the last is the content type
// unless it is "to=…" or the only one (then it is the recipient), and a word before a content
// type is the recipient. Anything else left over is malformed.
func parseHarmonyHeader(h string, roleKnown bool) (harmonyHeader, bool) {
	var out harmonyHeader
	if i := strings.Index(h, "<|channel|>"); i >= 0 {
		after := h[i+len("<|channel|>"):]
		end := strings.IndexFunc(after, func(r rune) bool { return r == '<' || isUnicodeSpace(r) })
		if end < 0 {
			end = len(after)
		}
		if end == 0 {
			return out, false
		}
		out.channel = after[:end]
		h = h[:i] + after[end:]
	}
	h = strings.TrimSpace(h)
	if strings.Contains(h, "<|constrain|>") {
		h = strings.TrimSpace(strings.ReplaceAll(h, "<|constrain|>", " <|constrain|>"))
	}
	parts := strings.FieldsFunc(h, isASCIISpace)
	if !roleKnown {
		if len(parts) == 0 || parts[0] != "assistant" {
			return out, false
		}
	}
	if len(parts) > 0 && parts[0] == "assistant" {
		parts = parts[1:]
	}
	if len(parts) > 0 {
		last := parts[len(parts)-1]
		parts = parts[:len(parts)-1]
		switch {
		case strings.HasPrefix(last, "to="):
			out.recipient = last[len("to="):]
		case len(parts) == 0:
			out.recipient = last
		default:
			out.contentType = last
			r := parts[len(parts)-1]
			parts = parts[:len(parts)-1]
			out.recipient = strings.TrimPrefix(r, "to=")
		}
	}
	return out, len(parts) == 0
}

func isASCIISpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' || r == '\v'
}

func isUnicodeSpace(r rune) bool {
	return isASCIISpace(r) || r == 0x85 || r == 0xA0 || r == 0x1680 || (r >= 0x2000 && r <= 0x200A) ||
		r == 0x2028 || r == 0x2029 || r == 0x202F || r == 0x205F || r == 0x3000
}

// argsCheck validates a call's arguments as they stream: one JSON object, whitespace around it.
type argsCheck struct {
	sc      jsonScanner
	started bool // the first non-space byte was seen
	done    bool // the object is complete
	bad     bool
}

func (a *argsCheck) reset() {
	a.sc.reset()
	a.started, a.done, a.bad = false, false, false
}

func (a *argsCheck) feed(s string) {
	for i := 0; i < len(s) && !a.bad; i++ {
		c := s[i]
		switch {
		case a.done:
			a.bad = !isSpace(c)
		case !a.started:
			if isSpace(c) {
				continue
			}
			a.started = true
			a.bad = c != '{'
			if !a.bad {
				a.sc.step(c)
			}
		default:
			switch a.sc.step(c) {
			case scanEnd:
				a.done = true
			case scanSyntaxErr:
				a.bad = true
			}
			if len(a.sc.stack) > maxArgsDepth {
				a.bad = true
			}
		}
	}
}

func (a *argsCheck) ok() bool { return a.done && !a.bad }

// ParseHarmonyHeader parses one message header as [HarmonyParser] does (openai_harmony's
// parse_header_from_string): h is the header's text with its markers spelled out
// ("assistant<|channel|>commentary to=functions.f <|constrain|>json"), the role first unless
// roleKnown (the prompt's "<|start|>assistant" gave it). ok is false for a header that does not
// parse.
func ParseHarmonyHeader(h string, roleKnown bool) (recipient, channel, contentType string, ok bool) {
	hh, ok := parseHarmonyHeader(h, roleKnown)
	return hh.recipient, hh.channel, hh.contentType, ok
}
