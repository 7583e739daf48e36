package sim

import (
	"encoding/binary"
	"hash/fnv"
	"math/rand/v2"
	"slices"
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
	if tools := parseXMLTools(system); len(tools) > 0 {
		return tools
	}
	_, rest, ok := strings.Cut(system, toolsOpen)
	if !ok {
		return nil
	}
	block, _, _ := strings.Cut(rest, toolsClose)
	if strings.HasPrefix(block, "<function>") {
		return markupTools(block) // Qwen3-Coder's XML definitions
	}
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
		if t.role == "user" && !isToolResult(t) {
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
	dialect   dialect
	fam       *family
	harmony   bool // gpt-oss: answers in Harmony channels
}

// isToolResult reports whether t carries tool output: a tool turn, or a ChatML user turn that
// starts with <tool_response> (how Qwen templates render tool messages).
func isToolResult(t chatTurn) bool {
	return t.role == "tool" || (t.role == "user" && strings.HasPrefix(strings.TrimSpace(t.content), toolRespOpen))
}

// toolResultText is the output inside a tool-result turn.
func toolResultText(t chatTurn) string {
	if t.role == "tool" {
		return strings.TrimSpace(t.content)
	}
	return toolResponse(t.content)
}

// parallelCue in the user's text asks the scripted model for parallel calls: one per tool the
// text names (every tool when it names none).
const parallelCue = "in parallel"

// malformedCue in the user's text makes the scripted model break its tool call after it began
// (writeBroken), so clients and servers can be tested on a malformed call.
const malformedCue = "malformed call"

// answer returns the text the model generates for the decoded prompt text, up to and excluding its
// end-of-sequence token, and which token ends it.
func (m *scriptedModel) answer(text string, r *rand.Rand) (string, answerEnd) {
	conv := m.dialect.parse(text)
	var b strings.Builder
	if !conv.open {
		m.prose.write(&b, r, m.length(r))
		return b.String(), endText
	}
	if m.harmony {
		t, call := m.harmonyAnswer(&conv, r)
		if call {
			return t, endCall
		}
		return t, endChat
	}
	last := conv.lastTurn()
	toolResult := isToolResult(last)
	var calls []*toolSpec
	if !toolResult && last.role == "user" && len(conv.tools) > 0 {
		calls = pickTools(conv.tools, last.content)
	}
	// A caller that forced a tool call (tool_choice) prefilled the start of one in the family's
	// format (its opener, maybe the name and more): the model writes the rest of that call.
	if rest, ok := m.continueForced(r, &conv); ok {
		return rest, endChat
	}
	m.reason(&b, r, &conv, calls, toolResult)

	// A forced prefix the family's writer does not start with (hermes: a partial name).
	if m.fam.calls.opener != "" && len(conv.tools) > 0 {
		if m.fam.parser == parserHermes {
			if i := strings.Index(conv.prefill, "<tool_call>\n"); i >= 0 {
				m.continueHermes(&b, r, &conv, conv.prefill[i+len("<tool_call>\n"):])
				return b.String(), endChat
			}
		} else if strings.HasSuffix(conv.prefill, m.fam.calls.opener) {
			if len(calls) == 0 {
				calls = []*toolSpec{pickTool(conv.tools, conv.lastUserText())}
			}
			var cb strings.Builder
			m.fam.calls.write(&cb, m.makeCalls(r, calls, conv.lastUserText()))
			b.WriteString(strings.TrimPrefix(cb.String(), m.fam.calls.opener))
			return b.String(), endChat
		}
	}
	switch {
	case len(calls) > 0 && strings.Contains(conv.lastUserText(), malformedCue):
		m.writeBroken(&b, m.makeCalls(r, calls, conv.lastUserText()))
	case len(calls) > 0:
		m.fam.calls.write(&b, m.makeCalls(r, calls, conv.lastUserText()))
	case toolResult:
		b.WriteString("The tool returned: ")
		b.WriteString(quote(toolResultText(last), 200))
		b.WriteString(".")
	default:
		m.prose.write(&b, r, m.length(r))
	}
	return b.String(), endChat
}

// writeBroken writes the calls as the family does but breaks the first one after its name and
// arguments began: where the family writes the arguments as JSON, they get a syntax error
// (`{"city": "Paris",,}`) and the call its closing markers as usual (the case where a parser must not
// leave the closing marker as message text); GLM writes stray text before </tool_call>; pythonic and
// qwen3_coder stop inside the first argument value (the answer ends there with the end-of-turn
// token).
func (m *scriptedModel) writeBroken(b *strings.Builder, calls []toolCall) {
	calls = calls[:1]
	switch m.fam.parser {
	case parserPythonic, parserQwen3Coder:
		var cb strings.Builder
		m.fam.calls.write(&cb, calls)
		text := cb.String()
		cut := map[string]string{parserPythonic: ")]", parserQwen3Coder: "\n</parameter>"}[m.fam.parser]
		if i := strings.LastIndex(text, cut); i > 0 {
			text = text[:i]
		}
		b.WriteString(text)
	case parserGLM45, parserGLM47:
		var cb strings.Builder
		m.fam.calls.write(&cb, calls)
		text := cb.String()
		if i := strings.LastIndex(text, "</tool_call>"); i > 0 {
			text = text[:i] + "oops" + text[i:]
		}
		b.WriteString(text)
	default:
		calls[0].args = strings.TrimSuffix(calls[0].args, "}") + ",,}"
		m.fam.calls.write(b, calls)
	}
}

// continueForced finishes a tool call whose start the caller prefilled (stitch's forced
// tool_choice text): the prefill from the family's call opener on is a prefix of the call the
// family writes for the tool it names (the longest tool name in it; else the one the user text
// names), and the model writes the rest. No opener in the prefill, or a prefill the call does not
// start with: false.
func (m *scriptedModel) continueForced(r *rand.Rand, conv *conversation) (string, bool) {
	opener := m.fam.calls.opener
	if opener == "" || len(conv.tools) == 0 {
		return "", false
	}
	i := strings.LastIndex(conv.prefill, opener)
	if i < 0 {
		return "", false
	}
	forced := conv.prefill[i:]
	var call *toolSpec
	for j := range conv.tools {
		if t := &conv.tools[j]; strings.Contains(forced[len(opener):], t.name) && (call == nil || len(t.name) > len(call.name)) {
			call = t
		}
	}
	if call == nil {
		call = pickTool(conv.tools, conv.lastUserText())
	}
	var cb strings.Builder
	m.fam.calls.write(&cb, m.makeCalls(r, []*toolSpec{call}, conv.lastUserText()))
	rest, ok := strings.CutPrefix(cb.String(), forced)
	return rest, ok
}

// answerEnd is the token an answer ends with.
type answerEnd int

const (
	endText answerEnd = iota // the dialect's end of a plain completion
	endChat                  // its end of an assistant turn
	endCall                  // Harmony's <|call|>
)

// makeCalls writes each call's arguments (and, for families that write them, its id).
func (m *scriptedModel) makeCalls(r *rand.Rand, specs []*toolSpec, userText string) []toolCall {
	out := make([]toolCall, len(specs))
	for i, t := range specs {
		var a strings.Builder
		writeArguments(&a, t.params, r, userText)
		out[i] = toolCall{name: t.name, args: a.String()}
		if m.fam.calls.ids {
			out[i].id = drawCallID(r)
		}
	}
	return out
}

// continueHermes finishes a hermes call whose start the caller prefilled: forced is what follows
// "<tool_call>\n" ("" or `{"name": "NAME"` and maybe more).
func (m *scriptedModel) continueHermes(b *strings.Builder, r *rand.Rand, conv *conversation, forced string) {
	call := pickTool(conv.tools, conv.lastUserText())
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
			writePyJSONString(b, call.name)
		}
		b.WriteString(", \"arguments\": ")
	}
	writeArguments(b, call.params, r, conv.lastUserText())
	b.WriteString("}\n</tool_call>")
}

// reason writes the reasoning block. The legacy family thinks on every fresh turn (Qwen3); a
// family with a reasoning parser thinks on a fresh turn and closes a block the template opened,
// and skips it when the template closed one (thinking off); without a reasoning parser, the model
// only closes a block the template opened.
func (m *scriptedModel) reason(b *strings.Builder, r *rand.Rand, conv *conversation, calls []*toolSpec, toolResult bool) {
	rw := m.fam.reasoning
	if rw == nil {
		qw := reasoningWriters[reasoningQwen3]
		if p := strings.TrimRight(conv.prefill, "\n"); strings.HasSuffix(p, qw.open) {
			rw = &qw
		} else {
			return
		}
	}
	prefill := conv.prefill
	if m.fam.legacy {
		// Before families: a think block on an empty prefill, or the close of an opened one.
		if prefill != "" && !strings.HasSuffix(prefill, "<think>\n") {
			return
		}
	} else if strings.Contains(prefill, rw.close) {
		return
	}
	opened := strings.HasSuffix(strings.TrimRight(prefill, "\n"), rw.open)
	switch {
	case opened:
		if !strings.HasSuffix(prefill, rw.afterOpen) {
			b.WriteString(rw.afterOpen)
		}
	case strings.TrimSpace(prefill) == "":
		b.WriteString(rw.open + rw.afterOpen)
	default:
		return // the caller prefilled an answer
	}
	m.think(b, r, conv, calls, toolResult)
	b.WriteString(rw.beforeClose + rw.close + rw.after)
}

// length draws a text answer's length in tokens, uniform in [L/2, 3L/2].
func (m *scriptedModel) length(r *rand.Rand) int {
	lo := max(1, m.outputLen/2)
	return lo + r.IntN(m.outputLen+1)
}

func (m *scriptedModel) think(b *strings.Builder, r *rand.Rand, conv *conversation, calls []*toolSpec, toolResult bool) {
	if q := conv.lastUserText(); q != "" {
		b.WriteString("The user asks: ")
		b.WriteString(quote(q, 80))
		b.WriteString(". ")
	}
	switch {
	case len(calls) > 0:
		names := make([]string, len(calls))
		for i, c := range calls {
			names[i] = c.name
		}
		b.WriteString("I should call " + strings.Join(names, " and ") + ".")
	case toolResult:
		b.WriteString("The tool answered, so I can reply.")
	default:
		b.WriteString("Let me answer.")
	}
	b.WriteString("\n\n")
	m.prose.write(b, r, max(8, m.outputLen/4))
}

// pickTools returns the tool to call for the user's text: one (pickTool), or, when the text asks
// for parallel calls, every tool it names in the order they appear (all tools if it names none).
func pickTools(tools []toolSpec, user string) []*toolSpec {
	if !strings.Contains(user, parallelCue) {
		return []*toolSpec{pickTool(tools, user)}
	}
	type hit struct {
		at int
		t  *toolSpec
	}
	var hits []hit
	for i := range tools {
		if at := strings.Index(user, tools[i].name); at >= 0 {
			hits = append(hits, hit{at, &tools[i]})
		}
	}
	if len(hits) == 0 {
		out := make([]*toolSpec, len(tools))
		for i := range tools {
			out[i] = &tools[i]
		}
		return out
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.at - b.at })
	out := make([]*toolSpec, len(hits))
	for i, h := range hits {
		out[i] = h.t
	}
	return out
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
