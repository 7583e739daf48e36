package harmony

import "strings"

// Generated is the header the model wrote on one of its output messages, as openai_harmony's
// parser read it. vLLM continues a stored gpt-oss response from the Harmony messages that parser
// produced (serving.py msg_store), not from the response's output items, so a continuation
// renders each earlier output message with the header the model wrote: a call keeps its
// `<|constrain|>json` content type (the items path writes ` json`), a preamble stays on
// commentary (the items path puts every assistant message on final), and a message the output
// stopped inside is not there at all (the parser keeps finished messages only).
type Generated struct {
	Channel, Recipient, ContentType string
	// Unfinished: vLLM's message store holds no message for the item: the output ended inside
	// it (no <|end|>, <|call|> or <|return|>), or (an input item) the continuation dropped it.
	Unfinished bool
}

// NoteDropped is the note of an item vLLM's message store holds no message for; other notes
// are the three header fields joined by a space, which none of them can hold (openai_harmony's
// header parser splits on whitespace and ends the channel there; a header that would is not
// noted): "commentary functions.get_weather <|constrain|>json", "commentary  ".
const (
	NoteDropped = "-"
	noteSep     = " "
)

// Note is g's string form, kept per output item id in the response's checkpoint
// (store.Checkpoint.ItemNotes); ok is false when g cannot be written as a note.
func (g Generated) Note() (string, bool) {
	if g.Unfinished {
		return NoteDropped, true
	}
	if strings.Contains(g.Channel+g.Recipient+g.ContentType, noteSep) {
		return "", false
	}
	return g.Channel + noteSep + g.Recipient + noteSep + g.ContentType, true
}

// ParseNote reads a note written by [Generated.Note].
func ParseNote(s string) (Generated, bool) {
	if s == NoteDropped {
		return Generated{Unfinished: true}, true
	}
	ch, rest, ok1 := strings.Cut(s, noteSep)
	rcpt, ct, ok2 := strings.Cut(rest, noteSep)
	if !ok1 || !ok2 || strings.Contains(ct, noteSep) {
		return Generated{}, false
	}
	return Generated{Channel: ch, Recipient: rcpt, ContentType: ct}, true
}

// Default reports whether g is the header the items path gives an output item of type typ
// ("reasoning", "message", "function_call"), so that a note would change nothing.
func (g Generated) Default(typ string) bool {
	if g.Unfinished {
		return false
	}
	switch typ {
	case "reasoning":
		return g == Generated{Channel: ChannelAnalysis}
	case "message":
		return g == Generated{Channel: ChannelFinal}
	case "function_call":
		return g.Channel == ChannelCommentary && g.ContentType == "json" && strings.HasPrefix(g.Recipient, "functions.")
	}
	return false
}

// apply gives m, an earlier output item's message, the header the model generated it with.
func (g Generated) apply(m Message) (out Message, keep bool) {
	m.Channel, m.Recipient, m.ContentType = g.Channel, g.Recipient, g.ContentType
	return m, true
}

// Decode returns the text of ids, markers spelled out (the tokenizer's decode with special
// tokens kept).
func (e *Encoder) Decode(ids []uint32) string { return e.tok.Decode(ids) }
