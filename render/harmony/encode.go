package harmony

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"

	"github.com/stitchllm/stitch/render/bpe"
)

// Special token ids of o200k_harmony (gpt-oss). [NewEncoder] checks the tokenizer agrees.
const (
	TokenEndOfText = 199999 // <|endoftext|>
	TokenReturn    = 200002 // <|return|>: the model is done (final answer)
	TokenConstrain = 200003 // <|constrain|>
	TokenChannel   = 200005 // <|channel|>
	TokenStart     = 200006 // <|start|>
	TokenEnd       = 200007 // <|end|>
	TokenMessage   = 200008 // <|message|>
	TokenCall      = 200012 // <|call|>: the model calls a tool
)

// StopTokenIDs are the stop_token_ids vLLM sends with every gpt-oss generation
// (openai_harmony's stop_tokens_for_assistant_actions): <|return|> and <|call|>.
var StopTokenIDs = []uint32{TokenReturn, TokenCall}

// specials maps the marker strings the encoder writes to their ids, in a fixed order.
var specials = [...]struct {
	text string
	id   uint32
}{
	{"<|return|>", TokenReturn}, {"<|constrain|>", TokenConstrain}, {"<|channel|>", TokenChannel},
	{"<|start|>", TokenStart}, {"<|end|>", TokenEnd}, {"<|message|>", TokenMessage}, {"<|call|>", TokenCall},
}

// ErrTokenizer marks a tokenizer that is not gpt-oss's (a Harmony marker is missing or has
// another id).
var ErrTokenizer = errors.New("harmony: tokenizer lacks the o200k_harmony special tokens")

// Encoder renders Harmony messages with a gpt-oss tokenizer. It is safe for concurrent use.
type Encoder struct {
	tok *bpe.Tokenizer
}

// NewEncoder returns an Encoder for tok, which must be gpt-oss's tokenizer.json (o200k_harmony).
func NewEncoder(tok *bpe.Tokenizer) (*Encoder, error) {
	if tok == nil {
		return nil, fmt.Errorf("%w: nil tokenizer", ErrTokenizer)
	}
	for _, s := range specials {
		id, ok := tok.TokenID(s.text)
		if !ok || id != s.id {
			return nil, fmt.Errorf("%w: %s", ErrTokenizer, s.text)
		}
	}
	return &Encoder{tok: tok}, nil
}

// Prompt is a rendered prompt: its token ids and its text (the ids decoded, markers as their
// strings).
type Prompt struct {
	IDs  []uint32
	Text string
}

// RenderOptions are openai_harmony's RenderConversationConfig.
type RenderOptions struct {
	// KeepAnalysis turns auto_drop_analysis off. vLLM renders with it on: when the last
	// assistant message is on the final channel, analysis messages before the first final
	// message are dropped.
	KeepAnalysis bool
}

// Render renders msgs followed by "<|start|>assistant", the prompt for the model's next turn:
// openai_harmony's render_conversation_for_completion(conversation, Role.ASSISTANT).
func (e *Encoder) Render(msgs []Message, opts RenderOptions) (Prompt, error) {
	var w writer
	w.enc = e
	if err := w.conversation(msgs, opts); err != nil {
		return Prompt{}, err
	}
	w.special(TokenStart, "<|start|>")
	w.text(string(RoleAssistant))
	return w.prompt(), nil
}

// RenderConversation renders msgs without opening a next turn (render_conversation).
func (e *Encoder) RenderConversation(msgs []Message, opts RenderOptions) (Prompt, error) {
	var w writer
	w.enc = e
	if err := w.conversation(msgs, opts); err != nil {
		return Prompt{}, err
	}
	return w.prompt(), nil
}

// writer accumulates ids and text, or, with h set, hashes the render script instead: the
// sequence of special ids and text pieces that determines the ids (each piece is encoded on its
// own), so equal scripts give equal ids without encoding anything.
type writer struct {
	enc    *Encoder
	ids    []uint32
	buf    strings.Builder
	noText bool      // ids only
	h      hash.Hash // set: hash the script, encode nothing
	tag    [9]byte
}

func (w *writer) prompt() Prompt { return Prompt{IDs: w.ids, Text: w.buf.String()} }

func (w *writer) special(id uint32, s string) {
	if w.h != nil {
		w.tag[0] = 0
		binary.LittleEndian.PutUint32(w.tag[1:], id)
		w.h.Write(w.tag[:5])
		return
	}
	w.ids = append(w.ids, id)
	if !w.noText {
		w.buf.WriteString(s)
	}
}

// text encodes s on its own as ordinary text: special-token strings inside it stay text, and
// no token spans two calls (openai_harmony encodes each header piece and content part
// separately).
func (w *writer) text(s string) {
	if w.h != nil {
		w.tag[0] = 1
		binary.LittleEndian.PutUint64(w.tag[1:], uint64(len(s)))
		w.h.Write(w.tag[:9])
		io.WriteString(w.h, s)
		return
	}
	w.ids = w.enc.tok.AppendEncodeOrdinary(w.ids, s)
	if !w.noText {
		w.buf.WriteString(s)
	}
}

// hasFunctionTools reports whether a developer message declares functions: it turns on the
// system message's note that function calls go to the commentary channel.
func hasFunctionTools(msgs []Message) bool {
	for i := range msgs {
		if d := msgs[i].Developer; d != nil && len(d.Tools) > 0 {
			return true
		}
	}
	return false
}

// dropped returns which messages auto_drop_analysis removes: when the last assistant message is
// on the final channel, the analysis messages before the first final message (of any role).
func dropped(msgs []Message, opts RenderOptions) (from, to int) {
	if opts.KeepAnalysis {
		return 0, 0
	}
	lastIsFinal := false
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleAssistant {
			lastIsFinal = msgs[i].Channel == ChannelFinal
			break
		}
	}
	if !lastIsFinal {
		return 0, 0
	}
	for i := range msgs {
		if msgs[i].Channel == ChannelFinal {
			return 0, i
		}
	}
	return 0, 0
}

func (w *writer) conversation(msgs []Message, opts RenderOptions) error {
	fnTools := hasFunctionTools(msgs)
	_, dropBefore := dropped(msgs, opts)
	for i := range msgs {
		if i < dropBefore && msgs[i].Channel == ChannelAnalysis {
			continue
		}
		if err := w.message(&msgs[i], fnTools); err != nil {
			return fmt.Errorf("harmony: message %d: %w", i, err)
		}
	}
	return nil
}

func (w *writer) message(m *Message, fnTools bool) error {
	if m.System != nil && m.Role != RoleSystem {
		return fmt.Errorf("system content in a %s message", m.Role)
	}
	if m.Developer != nil && m.Role != RoleDeveloper {
		return fmt.Errorf("developer content in a %s message", m.Role)
	}
	w.special(TokenStart, "<|start|>")
	if m.Role == RoleTool {
		if m.Name == "" {
			return errors.New("a tool message needs an author name")
		}
		w.text(m.Name)
	} else {
		w.text(string(m.Role))
		if m.Name != "" {
			w.text(":" + m.Name)
		}
	}
	if m.Recipient != "" && m.Recipient != "all" {
		w.text(" to=" + m.Recipient)
	}
	if m.Channel != "" {
		w.special(TokenChannel, "<|channel|>")
		w.text(m.Channel)
	}
	if m.ContentType != "" {
		if rest, ok := strings.CutPrefix(m.ContentType, "<|constrain|>"); ok {
			w.text(" ")
			w.special(TokenConstrain, "<|constrain|>")
			if rest != "" {
				w.text(rest)
			}
		} else {
			w.text(" " + m.ContentType)
		}
	}
	w.special(TokenMessage, "<|message|>")
	if m.System != nil {
		w.text(systemText(m.System, fnTools))
	}
	if m.Developer != nil {
		w.text(developerText(m.Developer))
	}
	for _, p := range m.Parts {
		w.text(p)
	}
	if m.Role == RoleAssistant && m.Recipient != "" {
		w.special(TokenCall, "<|call|>")
	} else {
		w.special(TokenEnd, "<|end|>")
	}
	return nil
}

// systemText is the system message body: sections joined by a blank line.
func systemText(s *SystemContent, fnTools bool) string {
	var sections []string
	var top []string
	if s.ModelIdentity != "" {
		top = append(top, s.ModelIdentity)
	}
	if s.KnowledgeCutoff != "" {
		top = append(top, "Knowledge cutoff: "+s.KnowledgeCutoff)
	}
	if s.StartDate != "" {
		top = append(top, "Current date: "+s.StartDate)
	}
	if len(top) > 0 {
		sections = append(sections, strings.Join(top, "\n"))
	}
	if s.Effort != "" {
		sections = append(sections, "Reasoning: "+string(s.Effort))
	}
	if len(s.ValidChannels) > 0 {
		line := "# Valid channels: " + strings.Join(s.ValidChannels, ", ") + "."
		if s.ChannelRequired {
			line += " Channel must be included for every message."
		}
		if fnTools {
			line += "\nCalls to these tools must go to the commentary channel: 'functions'."
		}
		sections = append(sections, line)
	}
	return strings.Join(sections, "\n\n")
}

// developerText is the developer message body: instructions, then the tools section.
func developerText(d *DeveloperContent) string {
	var sections []string
	if d.Instructions != nil {
		sections = append(sections, "# Instructions", *d.Instructions)
	}
	if len(d.Tools) > 0 {
		sections = append(sections, toolsSection(d.Tools))
	}
	return strings.Join(sections, "\n\n")
}

// toolsSection renders the `functions` namespace as openai_harmony's template_tools_section does.
func toolsSection(tools []ToolDescription) string {
	var b strings.Builder
	b.WriteString("# Tools\n\n## functions\n\nnamespace functions {\n")
	for _, t := range tools {
		for _, line := range rustLines(t.Description) {
			b.WriteString("\n// ")
			b.WriteString(line)
		}
		b.WriteString("\ntype ")
		b.WriteString(t.Name)
		if t.Parameters != nil {
			b.WriteString(" = (_: ")
			b.WriteString(schemaTypeScript(t.Parameters))
			b.WriteString(") => any;\n")
		} else {
			b.WriteString(" = () => any;\n")
		}
	}
	b.WriteString("\n} // namespace functions")
	return b.String()
}

// rustLines splits s like Rust's str::lines: on "\n", dropping one "\r" before it, with no empty
// last line after a trailing newline.
func rustLines(s string) []string {
	var lines []string
	for s != "" {
		line, rest, found := strings.Cut(s, "\n")
		if found {
			line = strings.TrimSuffix(line, "\r")
		}
		lines = append(lines, line)
		s = rest
	}
	return lines
}
