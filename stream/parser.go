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

// Piece kinds, in the order a parser can produce them for one item.
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
	// token indexes (0-based, counting every id given to the parser) that
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
// format and reports [Piece]s in generation order. [FamilyParser] implements it
// for vLLM's tool and reasoning parsers, [HarmonyParser] for gpt-oss.
// Implementations are not safe for concurrent use: each turn owns one.
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

// segment is the reasoning or message text being produced.
type segment struct {
	open    bool   // an item was started (a delta was emitted)
	start   int    // first token index of the segment
	leading bool   // still dropping leading newlines
	held    string // trailing newlines not yet emitted
}

// text emits s as text of the segment (of kind), dropping its leading
// newlines and holding trailing ones until more text shows they are not
// trailing.
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
