package stream

import "strings"

// TokenDecoder turns generated token ids into text incrementally, like the
// Hugging Face DecodeStream (render/bpe's *DecodeStream satisfies it).
type TokenDecoder interface {
	// Next returns the text completed by id: "" while a UTF-8 sequence is
	// still incomplete.
	Next(id uint32) string
	// Flush returns whatever is held (incomplete UTF-8 as U+FFFD) and resets.
	Flush() string
}

// PieceKind says what a [Piece] carries.
type PieceKind uint8

// Piece kinds, in the order the Parser can produce them for one item.
const (
	// PieceReasoning is a reasoning text delta (Piece.Text).
	PieceReasoning PieceKind = iota + 1
	// PieceReasoningDone ends the reasoning text; Start/End are its token range.
	PieceReasoningDone
	// PieceText is an assistant message text delta (Piece.Text).
	PieceText
	// PieceTextDone ends the message text; Start/End are its token range.
	PieceTextDone
	// PieceToolCall begins a function call; Piece.Text is the function name.
	PieceToolCall
	// PieceArguments is a delta of the call's raw arguments JSON (Piece.Text).
	PieceArguments
	// PieceToolCallDone ends the call; Start/End are its token range and
	// Incomplete reports that its arguments were cut off or malformed.
	PieceToolCallDone
)

var pieceKindNames = [...]string{"", "reasoning", "reasoning_done", "text", "text_done", "tool_call", "arguments", "tool_call_done"}

// String returns a short lower-case name ("text", "tool_call_done", …).
func (k PieceKind) String() string {
	if int(k) < len(pieceKindNames) {
		return pieceKindNames[k]
	}
	return "piece?"
}

// Piece is one semantic event of the model output, in generation order.
// Deltas of one item are never interleaved with another item's pieces.
type Piece struct {
	Kind PieceKind
	// Text is the delta for PieceReasoning, PieceText and PieceArguments, and
	// the function name for PieceToolCall.
	Text string
	// Start and End (for the *Done kinds) are the half-open range of generated
	// token indexes (0-based, counting every id given to the Parser) that
	// produced the item, markers included.
	Start, End int
	// Incomplete (PieceToolCallDone) reports that the call's arguments are not
	// a complete JSON object (cut by the end of output or by malformed JSON).
	Incomplete bool
	// CallID (PieceToolCall or PieceToolCallDone) is the call id the model
	// wrote itself (Mistral's 9-character ids, Kimi K2's functions.NAME:IDX),
	// "" when it wrote none; the
	// function_call's call_id is then this id, so a re-rendered history
	// matches what the model generated. A later non-empty CallID wins.
	CallID string
	// Logprobs (PieceText, set by a Converter with a LogprobMapper) are the logprobs of the
	// tokens whose text this delta begins; LogprobCont is the text at its start that continues
	// the token reported last, in an earlier delta.
	Logprobs    []Logprob
	LogprobCont string
}

// OutputParser reads one turn's generated token ids in a model family's output
// format and reports [Piece]s in generation order. [Parser] implements it for
// the Qwen3 family (hermes tool calls, qwen3 reasoning); each model family
// supplies its own. Implementations are not safe for concurrent use: each turn
// owns one.
//
// Contract, for every implementation:
//   - Append consumes exactly one id (the i-th call is token index i-1 in
//     Piece.Start/End) and appends what it produced to dst;
//   - Finish closes every open item (a tool call cut off ends Incomplete) and
//     may be called once, after the last Append;
//   - Ended reports whether an end-of-turn id was seen or Finish was called;
//     ids appended after that are counted and ignored;
//   - argument deltas of one call concatenate to exactly the JSON text of its
//     arguments (converted to JSON where the family writes another syntax).
type OutputParser interface {
	Append(dst []Piece, id uint32) []Piece
	Finish(dst []Piece) []Piece
	Ended() bool
}

var _ OutputParser = (*Parser)(nil)

// ParserOptions configures a [Parser] for a Qwen3-family model. Start from
// [Qwen3Options]. Options whose marker ids and EndOfTurn are all zero get the
// Qwen3 ids (the booleans are kept), so the zero value parses Qwen3 output.
type ParserOptions struct {
	ThinkStart    uint32 // <think>
	ThinkEnd      uint32 // </think>
	ToolCallStart uint32 // <tool_call>
	ToolCallEnd   uint32 // </tool_call>
	// EndOfTurn ids end the output and are not text (<|im_end|>,
	// <|endoftext|>, and any extra stop_token_ids of the request). Ids after
	// one are ignored.
	EndOfTurn []uint32
	// ThinkingOpen reports that the generation prompt already opened <think>,
	// so the output starts inside reasoning.
	ThinkingOpen bool
	// ParallelToolCalls keeps every tool call; false keeps only the first
	// well-formed one and drops later ones.
	ParallelToolCalls bool
	// DisableToolCalls treats tool-call markers as text (tool_choice "none",
	// or a request without tools).
	DisableToolCalls bool
}

// Qwen3 special token ids.
const (
	Qwen3EndOfText    = 151643 // <|endoftext|>
	Qwen3IMEnd        = 151645 // <|im_end|>
	Qwen3ToolCallOpen = 151657 // <tool_call>
	Qwen3ToolCallEnd  = 151658 // </tool_call>
	Qwen3ThinkOpen    = 151667 // <think>
	Qwen3ThinkEnd     = 151668 // </think>
)

// Qwen3Options returns the options for Qwen3 (and Qwen2.5/QwQ-style hermes
// tool calls), with parallel tool calls on and thinking not pre-opened.
func Qwen3Options() ParserOptions {
	return ParserOptions{
		ThinkStart:        Qwen3ThinkOpen,
		ThinkEnd:          Qwen3ThinkEnd,
		ToolCallStart:     Qwen3ToolCallOpen,
		ToolCallEnd:       Qwen3ToolCallEnd,
		EndOfTurn:         []uint32{Qwen3IMEnd, Qwen3EndOfText},
		ParallelToolCalls: true,
	}
}

type parseMode uint8

const (
	modeText parseMode = iota
	modeReasoning
	modeTool
	modeEnded
)

// segment is the reasoning or message text being produced.
type segment struct {
	open    bool   // an item was started (a delta was emitted)
	start   int    // first token index of the segment
	leading bool   // still dropping leading newlines
	held    string // trailing newlines not yet emitted
}

// text emits s as text of the segment (of kind), dropping its leading
// newlines and holding trailing ones until more text shows they are not
// trailing. Parser and FamilyParser share it.
func (g *segment) text(dst []Piece, s string, kind PieceKind) []Piece {
	if g.leading {
		s = strings.TrimLeft(s, "\n")
		if s == "" {
			return dst
		}
		g.leading = false
	}
	body := strings.TrimRight(s, "\n")
	if body == "" {
		g.held += s
		return dst
	}
	out := body
	if g.held != "" {
		out = g.held + body
	}
	g.held = s[len(body):]
	g.open = true
	return append(dst, Piece{Kind: kind, Text: out})
}

// close ends the segment (reasoning or message text) at token index end and
// starts the next one there; keepHeld emits held trailing newlines (message
// text at the end of output).
func (g *segment) close(dst []Piece, end int, reasoning, keepHeld bool) []Piece {
	kind, done := PieceText, PieceTextDone
	if reasoning {
		kind, done = PieceReasoning, PieceReasoningDone
	}
	if g.open {
		if keepHeld && g.held != "" && kind == PieceText {
			dst = append(dst, Piece{Kind: kind, Text: g.held})
		}
		dst = append(dst, Piece{Kind: done, Start: g.start, End: end})
	}
	*g = segment{start: end, leading: true}
	return dst
}

// Parser turns generated token ids into [Piece]s for the Qwen3 output format:
// optional `<think>…</think>` reasoning, message text, and hermes tool calls
// `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`.
//
// Text rules (those the Qwen3 chat template applies when it renders history):
// reasoning is stripped of leading and trailing newlines; message text is
// stripped of leading newlines, and of trailing newlines before a tool call;
// a segment that is only newlines produces no item. Marker and end-of-turn ids
// are never text, except a marker outside its place (e.g. </tool_call> in
// message text), which is decoded as text.
//
// Tool calls: the function_call begins once the name is known and the
// arguments object has started; argument bytes stream verbatim, so the deltas
// concatenate to the exact JSON text the model wrote. A call that is malformed
// before it begins becomes message text (its raw text, markers included). A
// call that breaks after it began ends Incomplete at its </tool_call> (or the
// end of output): the rest of its text is dropped, never message text, and
// [Parser.Malformed] reports it. Text after a call whose name and arguments are
// complete (junk before </tool_call>) is dropped the same way, and that call is
// complete. A call whose name and arguments are complete but whose closing
// brace or </tool_call> is missing is accepted.
//
// A Parser is not safe for concurrent use.
type Parser struct {
	opts ParserOptions
	dec  TokenDecoder
	mode parseMode
	n    int // index of the next id

	seg          segment
	thinkAllowed bool // <think> may still open reasoning

	call      hermesCall
	callStart int    // token index of <tool_call>
	raw       []byte // raw text of the call, for the fallback
	committed bool   // the call began (PieceToolCall emitted or suppressed)
	suppress  bool   // committed but dropped (ParallelToolCalls false)
	calls     int    // calls begun
	argBuf    []byte // argument bytes of the current id
	broken    bool   // the begun call broke: its text is dropped up to </tool_call>
	malformed bool   // some call broke after it began
}

// NewParser returns a Parser that decodes text with dec. It panics if dec is nil.
func NewParser(dec TokenDecoder, opts ParserOptions) *Parser {
	if dec == nil {
		panic("stream: NewParser with nil TokenDecoder")
	}
	if opts.ThinkStart == 0 && opts.ThinkEnd == 0 && opts.ToolCallStart == 0 && opts.ToolCallEnd == 0 && len(opts.EndOfTurn) == 0 {
		q := Qwen3Options()
		q.ThinkingOpen, q.ParallelToolCalls, q.DisableToolCalls = opts.ThinkingOpen, opts.ParallelToolCalls, opts.DisableToolCalls
		opts = q
	}
	p := &Parser{opts: opts, dec: dec}
	if opts.ThinkingOpen {
		p.mode = modeReasoning
		p.seg = segment{leading: true}
	} else {
		p.thinkAllowed = true
		p.seg = segment{leading: true}
	}
	return p
}

// Ended reports whether an end-of-turn id was seen (or Finish was called).
func (p *Parser) Ended() bool { return p.mode == modeEnded }

// Count returns the number of ids given to Append.
func (p *Parser) Count() int { return p.n }

// Malformed reports that a tool call broke after it began (issue 16 item 2):
// it ended Incomplete, and the caller should end the response incomplete
// rather than completed.
func (p *Parser) Malformed() bool { return p.malformed }

func (p *Parser) isEndOfTurn(id uint32) bool {
	for _, e := range p.opts.EndOfTurn {
		if id == e {
			return true
		}
	}
	return false
}

// Append consumes one generated id and appends the pieces it produces to dst.
func (p *Parser) Append(dst []Piece, id uint32) []Piece {
	idx := p.n
	p.n++
	if p.mode == modeEnded {
		return dst
	}
	if p.isEndOfTurn(id) {
		return p.finish(dst, idx)
	}
	switch {
	case id == p.opts.ThinkStart && p.mode == modeText && p.thinkAllowed:
		dst = p.flushDecoder(dst, idx)
		if p.mode == modeText && p.thinkAllowed {
			p.mode = modeReasoning
			p.thinkAllowed = false
			p.seg = segment{start: idx, leading: true}
			return dst
		}
	case id == p.opts.ThinkEnd && p.mode == modeReasoning:
		dst = p.flushDecoder(dst, idx)
		dst = p.closeSegment(dst, idx+1, false)
		p.mode = modeText
		p.seg = segment{start: idx + 1, leading: true}
		return dst
	case id == p.opts.ToolCallStart && !p.opts.DisableToolCalls && (p.mode == modeText || p.mode == modeTool):
		dst = p.flushDecoder(dst, idx)
		if p.mode == modeTool {
			dst = p.endCall(dst, idx)
		}
		if p.mode == modeText {
			// The message stays open until the call begins: a call that
			// turns out malformed continues it as text.
			p.thinkAllowed = false
			p.mode = modeTool
			p.callStart = idx
			p.call.reset()
			p.committed, p.suppress, p.broken = false, false, false
			p.raw = append(p.raw[:0], p.dec.Next(id)...)
			return dst
		}
	case id == p.opts.ToolCallEnd && p.mode == modeTool:
		dst = p.flushDecoder(dst, idx)
		if p.mode == modeTool {
			marker := p.dec.Next(id)
			if !p.committed {
				p.raw = append(p.raw, marker...)
			}
			return p.endCall(dst, idx+1)
		}
	}
	return p.text(dst, p.dec.Next(id), idx)
}

// Finish ends the output (end of stream without an end-of-turn id) and
// appends the pieces that close what is open. Later Appends are ignored.
func (p *Parser) Finish(dst []Piece) []Piece {
	if p.mode == modeEnded {
		return dst
	}
	return p.finish(dst, p.n)
}

func (p *Parser) finish(dst []Piece, end int) []Piece {
	dst = p.flushDecoder(dst, end)
	switch p.mode {
	case modeTool:
		dst = p.endCall(dst, end)
		if p.mode == modeText {
			dst = p.closeSegment(dst, end, true)
		}
	case modeReasoning:
		dst = p.closeSegment(dst, end, false)
	case modeText:
		dst = p.closeSegment(dst, end, true)
	}
	p.mode = modeEnded
	return dst
}

// flushDecoder routes text held by the decoder (an incomplete UTF-8 sequence
// cut by a marker or the end) to the current mode; idx is the index of the id
// that cut it, so the text belongs to the id before.
func (p *Parser) flushDecoder(dst []Piece, idx int) []Piece {
	if s := p.dec.Flush(); s != "" {
		dst = p.text(dst, s, max(idx-1, 0))
	}
	return dst
}

// text routes decoded text produced by token idx.
func (p *Parser) text(dst []Piece, s string, idx int) []Piece {
	if s == "" {
		return dst
	}
	switch p.mode {
	case modeReasoning:
		return p.segmentText(dst, s, PieceReasoning)
	case modeTool:
		return p.callText(dst, s, idx)
	case modeText:
		if p.thinkAllowed {
			if strings.TrimSpace(s) == "" {
				// Whitespace before a possible <think>: hold it; it is
				// dropped if reasoning opens.
				if p.seg.leading {
					s = strings.TrimLeft(s, "\n")
				}
				if s != "" {
					p.seg.held += s
					p.seg.leading = false
				}
				return dst
			}
			p.thinkAllowed = false
		}
		return p.segmentText(dst, s, PieceText)
	}
	return dst
}

// segmentText emits text of the current segment, holding trailing newlines
// until more text shows they are not trailing.
func (p *Parser) segmentText(dst []Piece, s string, kind PieceKind) []Piece {
	return p.seg.text(dst, s, kind)
}

// closeSegment ends the current text or reasoning segment at token index end.
// keepHeld emits held trailing newlines (message text at end of output).
func (p *Parser) closeSegment(dst []Piece, end int, keepHeld bool) []Piece {
	return p.seg.close(dst, end, p.mode == modeReasoning, keepHeld)
}

// callText feeds text of a tool call to the hermes scanner.
func (p *Parser) callText(dst []Piece, s string, idx int) []Piece {
	if p.broken {
		return dst
	}
	p.raw = append(p.raw, s...)
	p.argBuf = p.argBuf[:0]
	for i := 0; i < len(s); i++ {
		isArg, ok := p.call.step(s[i])
		if !ok {
			dst = p.flushArgs(dst)
			return p.breakCall(dst)
		}
		if !p.committed {
			if p.call.hasName && len(p.call.args) > 0 {
				p.committed = true
				p.suppress = p.calls > 0 && !p.opts.ParallelToolCalls
				p.calls++
				dst = p.closeSegment(dst, p.callStart, false)
				if !p.suppress {
					dst = append(dst, Piece{Kind: PieceToolCall, Text: p.call.name})
					p.argBuf = append(p.argBuf, p.call.args...)
				}
			}
		} else if isArg && !p.suppress {
			p.argBuf = append(p.argBuf, s[i])
		}
	}
	return p.flushArgs(dst)
}

func (p *Parser) flushArgs(dst []Piece) []Piece {
	if len(p.argBuf) > 0 {
		dst = append(dst, Piece{Kind: PieceArguments, Text: string(p.argBuf)})
		p.argBuf = p.argBuf[:0]
	}
	return dst
}

// breakCall handles the first byte that makes the call malformed. A call that
// never began becomes message text; a begun one drops the rest of its text up
// to </tool_call> and ends there, Incomplete unless its name and arguments
// were already whole.
func (p *Parser) breakCall(dst []Piece) []Piece {
	if !p.committed {
		// Never began: the whole raw text, markers included, is message text.
		return p.fallback(dst)
	}
	p.broken = true
	if !p.call.usable() && !p.suppress {
		p.malformed = true
	}
	return dst
}

// fallback turns the uncommitted call's raw text into message text,
// continuing the message that preceded the call (with its held newlines).
func (p *Parser) fallback(dst []Piece) []Piece {
	p.mode = modeText
	p.seg.leading = false
	return p.segmentText(dst, string(p.raw), PieceText)
}

// endCall closes the current call at token index end (after </tool_call>, at
// a new <tool_call>, or at the end of output). A call that never began
// becomes message text, and that message stays open for what follows.
func (p *Parser) endCall(dst []Piece, end int) []Piece {
	switch {
	case p.committed:
		if !p.suppress {
			dst = append(dst, Piece{Kind: PieceToolCallDone, Start: p.callStart, End: end, Incomplete: !p.call.usable()})
		}
		p.mode = modeText
		p.seg = segment{start: end, leading: true}
	default:
		dst = p.fallback(dst)
	}
	return dst
}
