package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Qwen3 chat markup, as the chat template writes it and the model answers in it.
const (
	imStart      = "<|im_start|>"
	imEnd        = "<|im_end|>"
	endOfText    = "<|endoftext|>"
	toolsOpen    = "<tools>\n" // the newline skips the "<tools></tools>" mention before the block
	toolsClose   = "</tools>"
	toolRespOpen = "<tool_response>"
	toolRespEnd  = "</tool_response>"
)

// chatTurn is one <|im_start|>role\ncontent<|im_end|> block of a rendered prompt.
type chatTurn struct {
	role, content string
}

// toolSpec is one function offered in the system block's <tools> section.
type toolSpec struct {
	name   string
	params gjson.Result // the JSON schema of the arguments; may not exist
}

// conversation is what the scripted model reads from a decoded prompt.
type conversation struct {
	turns []chatTurn // complete turns, in order
	tools []toolSpec
	// open reports whether the prompt ends inside an assistant turn (a generation prompt);
	// prefill is the text already written in it ("" or an empty think block for Qwen3).
	open    bool
	prefill string
}

// parseConversation reads the Qwen3 chat structure of text. Text before the first <|im_start|> is
// ignored; a prompt without any turn yields a zero conversation.
func parseConversation(text string) conversation {
	var c conversation
	for {
		i := strings.Index(text, imStart)
		if i < 0 {
			break
		}
		text = text[i+len(imStart):]
		role, rest, _ := strings.Cut(text, "\n")
		content, after, closed := strings.Cut(rest, imEnd)
		if !closed {
			if role == "assistant" {
				c.open, c.prefill = true, rest
			}
			break
		}
		c.turns = append(c.turns, chatTurn{role: role, content: content})
		text = after
	}
	if len(c.turns) > 0 && c.turns[0].role == "system" {
		c.tools = parseTools(c.turns[0].content)
	}
	return c
}

// parseTools reads the JSON lines between <tools> and </tools>: one
// {"type":"function","function":{"name":…,"parameters":…}} per line (or the bare function).
func parseTools(system string) []toolSpec {
	_, rest, ok := strings.Cut(system, toolsOpen)
	if !ok {
		return nil
	}
	block, _, _ := strings.Cut(rest, toolsClose)
	var tools []toolSpec
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		if line == "" || !gjson.Valid(line) {
			continue
		}
		fn := gjson.Parse(line)
		if f := fn.Get("function"); f.IsObject() {
			fn = f
		}
		name := fn.Get("name").String()
		if name == "" {
			continue
		}
		tools = append(tools, toolSpec{name: name, params: fn.Get("parameters")})
	}
	return tools
}

// lastTurn returns the last complete turn, or a zero turn.
func (c *conversation) lastTurn() chatTurn {
	if len(c.turns) == 0 {
		return chatTurn{}
	}
	return c.turns[len(c.turns)-1]
}

// lastUserText returns the content of the last user turn that is not a tool result.
func (c *conversation) lastUserText() string {
	for i := len(c.turns) - 1; i >= 0; i-- {
		t := c.turns[i]
		if t.role == "user" && !strings.HasPrefix(strings.TrimSpace(t.content), toolRespOpen) {
			return t.content
		}
	}
	return ""
}

// modelRand returns the deterministic random source of one answer: the same seed and prompt give
// the same stream, in any process.
func modelRand(seed int64, prompt []uint32) *rand.Rand {
	h := fnv.New64a()
	var buf [4]byte
	for _, id := range prompt {
		binary.LittleEndian.PutUint32(buf[:], id)
		h.Write(buf[:])
	}
	return rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
}

// scriptedModel writes the answers. It is stateless; safe for concurrent use.
type scriptedModel struct {
	prose     *proseWriter
	outputLen int
}

// answer returns the text the model generates for the decoded prompt text, up to and excluding its
// end-of-sequence token, and whether the prompt was a chat (then the answer ends with <|im_end|>,
// else with <|endoftext|>).
func (m *scriptedModel) answer(text string, r *rand.Rand) (string, bool) {
	conv := parseConversation(text)
	var b strings.Builder
	if !conv.open {
		m.prose.write(&b, r, m.length(r))
		return b.String(), false
	}
	last := conv.lastTurn()
	toolResult := last.role == "user" && strings.HasPrefix(strings.TrimSpace(last.content), toolRespOpen)
	var call *toolSpec
	if !toolResult && last.role == "user" && len(conv.tools) > 0 {
		call = pickTool(conv.tools, last.content)
	}

	// Thinking is on unless the template already closed an (empty) think block or the turn was
	// prefilled by the caller (continue_final_message). A template whose generation prompt opens
	// the think block leaves the model to write the thoughts and close it.
	switch {
	case conv.prefill == "":
		b.WriteString("<think>\n")
		m.think(&b, r, &conv, call, toolResult)
		b.WriteString("\n</think>\n\n")
	case strings.HasSuffix(conv.prefill, "<think>\n"):
		m.think(&b, r, &conv, call, toolResult)
		b.WriteString("\n</think>\n\n")
	}
	// A caller that forced a tool call (tool_choice) prefilled "<tool_call>\n" and maybe the name:
	// continue that call.
	if i := strings.Index(conv.prefill, "<tool_call>\n"); i >= 0 && len(conv.tools) > 0 {
		forced := conv.prefill[i+len("<tool_call>\n"):]
		call = pickTool(conv.tools, conv.lastUserText())
		if name, ok := strings.CutPrefix(forced, `{"name": "`); ok {
			name, _, _ = strings.Cut(name, `"`)
			for i := range conv.tools {
				if conv.tools[i].name == name {
					call = &conv.tools[i]
				}
			}
		}
		if !strings.Contains(forced, `"arguments": `) {
			if forced == "" {
				b.WriteString("{\"name\": ")
				writePyJSONString(&b, call.name)
			}
			b.WriteString(", \"arguments\": ")
		}
		writeArguments(&b, call.params, r, conv.lastUserText())
		b.WriteString("}\n</tool_call>")
		return b.String(), true
	}
	switch {
	case call != nil:
		b.WriteString("<tool_call>\n{\"name\": ")
		writePyJSONString(&b, call.name)
		b.WriteString(", \"arguments\": ")
		writeArguments(&b, call.params, r, conv.lastUserText())
		b.WriteString("}\n</tool_call>")
	case toolResult:
		b.WriteString("The tool returned: ")
		b.WriteString(quote(toolResponse(last.content), 200))
		b.WriteString(".")
	default:
		m.prose.write(&b, r, m.length(r))
	}
	return b.String(), true
}

// length draws a text answer's length in tokens, uniform in [L/2, 3L/2].
func (m *scriptedModel) length(r *rand.Rand) int {
	lo := max(1, m.outputLen/2)
	return lo + r.IntN(m.outputLen+1)
}

func (m *scriptedModel) think(b *strings.Builder, r *rand.Rand, conv *conversation, call *toolSpec, toolResult bool) {
	if q := conv.lastUserText(); q != "" {
		b.WriteString("The user asks: ")
		b.WriteString(quote(q, 80))
		b.WriteString(". ")
	}
	switch {
	case call != nil:
		b.WriteString("I should call " + call.name + ".")
	case toolResult:
		b.WriteString("The tool answered, so I can reply.")
	default:
		b.WriteString("Let me answer.")
	}
	b.WriteString("\n\n")
	m.prose.write(b, r, max(8, m.outputLen/4))
}

// pickTool returns the tool the user message names (the longest name found in it), else the first.
func pickTool(tools []toolSpec, user string) *toolSpec {
	best := &tools[0]
	found := false
	for i := range tools {
		t := &tools[i]
		if strings.Contains(user, t.name) && (!found || len(t.name) > len(best.name)) {
			best, found = t, true
		}
	}
	return best
}

// toolResponse returns the text inside the first <tool_response> block of a user turn.
func toolResponse(content string) string {
	_, rest, _ := strings.Cut(content, toolRespOpen)
	body, _, _ := strings.Cut(rest, toolRespEnd)
	return strings.TrimSpace(body)
}

// quote returns s on one line in double quotes, cut to at most n bytes on a rune boundary. "<"
// becomes "‹" so that quoted markup (<tool_call>, <|im_end|>) never turns into added tokens inside
// the answer.
func quote(s string, n int) string {
	s = strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "<", "‹")
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return `"` + s + `"`
}
