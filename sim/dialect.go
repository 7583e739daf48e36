package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// dialect reads a family's rendered chat prompt back into a conversation, and names the tokens
// that end the model's answers. The scripted model only needs the structure (roles, the last user
// text, tool results, offered tools, whether the prompt ends in an open assistant turn), so each
// reader keys on the template's role markers, never on exact whitespace.
type dialect struct {
	name string
	// chatEnd ends an assistant turn; textEnd ends a completion of a prompt that is not a chat.
	chatEnd, textEnd string
	parse            func(text string) conversation
}

// dialects in detection order: the first whose required tokens the tokenizer has is used.
var dialects = []struct {
	needs []string
	d     dialect
}{
	{[]string{imStart, imEnd, endOfText}, dialect{name: "chatml", chatEnd: imEnd, textEnd: endOfText, parse: parseConversation}},
	{[]string{"<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", "<|end_of_text|>"},
		dialect{name: "llama3", chatEnd: "<|eot_id|>", textEnd: "<|end_of_text|>", parse: parseLlama3}},
	{[]string{"[INST]", "[/INST]", "</s>"}, dialect{name: "mistral", chatEnd: "</s>", textEnd: "</s>", parse: mistralReader.parse}},
	{[]string{"<｜User｜>", "<｜Assistant｜>", "<｜end▁of▁sentence｜>"},
		dialect{name: "deepseek", chatEnd: "<｜end▁of▁sentence｜>", textEnd: "<｜end▁of▁sentence｜>", parse: deepseekReader.parse}},
	{[]string{"<|user|>", "<|assistant|>", "<|observation|>", "<|endoftext|>"},
		dialect{name: "glm", chatEnd: "<|user|>", textEnd: "<|endoftext|>", parse: glmReader.parse}},
	{[]string{"<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>"},
		dialect{name: "kimi", chatEnd: "<|im_end|>", textEnd: "<|im_end|>", parse: kimiReader.parse}},
	{[]string{gemmaStart, gemmaEnd, "<eos>"}, dialect{name: "gemma3", chatEnd: gemmaEnd, textEnd: "<eos>", parse: parseGemma3}},
}

// Gemma 3's turn markers.
const gemmaStart, gemmaEnd = "<start_of_turn>", "<end_of_turn>"

// parseGemma3 reads <start_of_turn>role\ncontent<end_of_turn> turns (roles user and model; the
// system text and, with vLLM's pythonic tool template, the tools open the first user turn; a
// tool result is a user turn wrapped in <tool_response>…</tool_response>).
func parseGemma3(text string) conversation {
	var c conversation
	for {
		i := strings.Index(text, gemmaStart)
		if i < 0 {
			break
		}
		text = text[i+len(gemmaStart):]
		role, rest, _ := strings.Cut(text, "\n")
		if role == "model" {
			role = "assistant"
		}
		end := strings.Index(rest, gemmaEnd)
		if end < 0 {
			if role == "assistant" {
				c.open, c.prefill = true, rest
			}
			break
		}
		content := rest[:end]
		if role == "user" && strings.HasPrefix(content, "<tool_response>") {
			role, content = "tool", strings.TrimSuffix(strings.TrimPrefix(content, "<tool_response>\n"), "</tool_response>")
		}
		c.turns = append(c.turns, chatTurn{role: role, content: content})
		text = rest[end:]
	}
	c.tools = findTools(c.turns)
	for i := range c.turns { // the scripted model reads what follows the tools array
		if t := &c.turns[i]; t.role == "user" {
			if _, end := toolsIn(t.content); end > 0 {
				t.content = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(t.content[end:]), "]"))
			}
		}
	}
	return c
}

// detectDialect picks the dialect of the tokenizer's chat tokens.
func detectDialect(tok tokenLookup) (dialect, error) {
	for _, c := range dialects {
		ok := true
		for _, t := range c.needs {
			if _, has := tok.TokenID(t); !has {
				ok = false
				break
			}
		}
		if ok {
			return c.d, nil
		}
	}
	return dialect{}, fmt.Errorf("%w: the tokenizer has none of the chat markups the simulator reads (ChatML %s, Llama 3 headers, Mistral [INST], DeepSeek <｜User｜>, GLM <|user|>, Kimi <|im_user|>, Gemma 3 <start_of_turn>, Harmony)", ErrUnsupportedModel, imStart)
}

// parseLlama3 reads <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|> turns; tool
// results are the ipython (or tool) role.
func parseLlama3(text string) conversation {
	const hs, he = "<|start_header_id|>", "<|end_header_id|>"
	var c conversation
	for {
		i := strings.Index(text, hs)
		if i < 0 {
			break
		}
		text = text[i+len(hs):]
		role, rest, _ := strings.Cut(text, he)
		rest = strings.TrimPrefix(rest, "\n\n")
		if role == "ipython" {
			role = "tool"
		}
		end := strings.Index(rest, "<|eot_id|>")
		if e := strings.Index(rest, "<|eom_id|>"); e >= 0 && (end < 0 || e < end) {
			end = e
		}
		if end < 0 {
			if role == "assistant" {
				c.open, c.prefill = true, rest
			}
			break
		}
		c.turns = append(c.turns, chatTurn{role: role, content: rest[:end]})
		text = rest[end:]
	}
	c.tools = findTools(c.turns)
	// Llama 3.1/3.2 templates put the tools (and an instruction) before the first user message's
	// text: the scripted model reads what follows them.
	for i := range c.turns {
		if t := &c.turns[i]; t.role == "user" {
			if _, end := toolsIn(t.content); end > 0 {
				t.content = strings.TrimSpace(t.content[end:])
			}
		}
	}
	return c
}

// markerAction is what a role marker does in a markerReader.
type markerAction int

const (
	startUser markerAction = iota
	startSystem
	startTool
	startTools // a tool-definitions block
	openAssistant
	closeTurn
	nameEnd // Kimi: the text since the role marker was the role's name
	ignore
)

// markerReader reads markups made of marker tokens: a marker starts (and so ends) a turn.
type markerReader struct {
	markers []string
	actions []markerAction
}

func newMarkerReader(pairs ...any) markerReader {
	var r markerReader
	for i := 0; i < len(pairs); i += 2 {
		r.markers = append(r.markers, pairs[i].(string))
		r.actions = append(r.actions, pairs[i+1].(markerAction))
	}
	return r
}

var (
	mistralReader = newMarkerReader("[INST]", startUser, "[/INST]", openAssistant, "</s>", closeTurn,
		"[TOOL_RESULTS]", startTool, "[/TOOL_RESULTS]", openAssistant,
		"[AVAILABLE_TOOLS]", startTools, "[/AVAILABLE_TOOLS]", closeTurn, "<s>", ignore)
	deepseekReader = newMarkerReader("<｜begin▁of▁sentence｜>", startSystem, "<｜User｜>", startUser,
		"<｜Assistant｜>", openAssistant, "<｜end▁of▁sentence｜>", closeTurn,
		"<｜tool▁output▁begin｜>", startTool, "<｜tool▁output▁end｜>", closeTurn,
		"<｜tool▁outputs▁begin｜>", ignore, "<｜tool▁outputs▁end｜>", openAssistant)
	glmReader = newMarkerReader("<|system|>", startSystem, "<|user|>", startUser, "<|assistant|>", openAssistant,
		"<|observation|>", startTool, "[gMASK]", ignore, "<sop>", ignore)
	kimiReader = newMarkerReader("<|im_system|>", startSystem, "<|im_user|>", startUser, "<|im_assistant|>", openAssistant,
		"<|im_middle|>", nameEnd, "<|im_end|>", closeTurn)
)

// parse splits text at the reader's markers.
func (mr markerReader) parse(text string) conversation {
	var c conversation
	role, inTurn := "", false
	var content strings.Builder
	flush := func() {
		if inTurn && !(role == "assistant" && content.Len() == 0) {
			c.turns = append(c.turns, chatTurn{role: role, content: content.String()})
		}
		inTurn = false
		content.Reset()
	}
	for len(text) > 0 {
		at, which := -1, -1
		for i, m := range mr.markers {
			if j := strings.Index(text, m); j >= 0 && (at < 0 || j < at) {
				at, which = j, i
			}
		}
		if at < 0 {
			content.WriteString(text)
			break
		}
		content.WriteString(text[:at])
		text = text[at+len(mr.markers[which]):]
		switch mr.actions[which] {
		case startUser, startSystem, startTool, startTools:
			flush()
			role, inTurn = [...]string{"user", "system", "tool", "tools"}[mr.actions[which]], true
		case openAssistant:
			flush()
			role, inTurn = "assistant", true
		case closeTurn:
			flush()
		case nameEnd:
			if name := strings.TrimSpace(content.String()); name == "tool" {
				role = "tool"
			}
			content.Reset()
		}
	}
	switch {
	case inTurn && role == "assistant":
		c.open, c.prefill = true, content.String()
	case !inTurn && len(c.turns) > 0 && c.turns[len(c.turns)-1].role == "tool" && strings.TrimSpace(content.String()) == "":
		// The prompt ends with a closed tool result and no assistant header (vLLM's DeepSeek V3.1
		// tool template after a tool message): the model answers right there.
		c.open = true
	default:
		flush()
	}
	c.tools = findTools(c.turns)
	return c
}

// findTools collects the function definitions rendered into system, user and tool-definition
// turns as JSON: {"type":"function","function":{"name",…,"parameters"}} or a bare
// {"name",…,"parameters":{schema}}.
func findTools(turns []chatTurn) []toolSpec {
	var tools []toolSpec
	for _, t := range turns {
		if t.role != "system" && t.role != "user" && t.role != "tools" {
			continue
		}
		found, _ := toolsIn(t.content)
		if len(found) == 0 {
			found = markupTools(t.content)
		}
		tools = append(tools, found...)
	}
	return tools
}

// markupTools reads tool definitions that templates render as markup rather than JSON:
// Qwen3-Coder's <function>\n<name>N</name>…<parameters><parameter>\n<name>k</name>\n<type>t</type>
// blocks, and vLLM's DeepSeek V3.1 tool template's "### N\nDescription: …\n\nParameters: {schema}".
func markupTools(s string) []toolSpec {
	var tools []toolSpec
	for rest := s; ; {
		_, after, ok := strings.Cut(rest, "<function>\n<name>")
		if !ok {
			break
		}
		name, body, _ := strings.Cut(after, "</name>")
		block, next, _ := strings.Cut(body, "</function>")
		rest = next
		props := "{"
		for pr := block; ; {
			_, p, ok := strings.Cut(pr, "<parameter>\n<name>")
			if !ok {
				break
			}
			k, p, _ := strings.Cut(p, "</name>")
			typ := "string"
			if _, t, ok := strings.Cut(p, "<type>"); ok {
				typ, _, _ = strings.Cut(t, "</type>")
			}
			if len(props) > 1 {
				props += ","
			}
			props += strconv.Quote(k) + `:{"type":` + strconv.Quote(typ) + "}"
			pr = p
		}
		tools = append(tools, toolSpec{name: name, params: gjson.Parse(`{"type":"object","properties":` + props + "}}")})
	}
	for rest := s; ; {
		i := strings.Index(rest, "\n### ")
		if i < 0 {
			break
		}
		rest = rest[i+len("\n### "):]
		name, body, _ := strings.Cut(rest, "\n")
		_, schema, ok := strings.Cut(body, "\nParameters: ")
		if !ok || strings.ContainsAny(name, " \t") {
			continue
		}
		if end := jsonObjectEnd(schema, 0); strings.HasPrefix(schema, "{") && end > 0 && gjson.Valid(schema[:end]) {
			tools = append(tools, toolSpec{name: name, params: gjson.Parse(schema[:end])})
		}
	}
	return tools
}

// toolsIn returns the tool definitions in s and the offset just past the last one (0: none).
func toolsIn(s string) ([]toolSpec, int) {
	var tools []toolSpec
	last := 0
	for i := 0; i < len(s); i++ {
		if s[i] != '{' {
			continue
		}
		end := jsonObjectEnd(s, i)
		if end < 0 {
			continue
		}
		obj := s[i:end]
		if !gjson.Valid(obj) {
			continue
		}
		v := gjson.Parse(obj)
		if f := v.Get("function"); f.IsObject() && f.Get("name").Type == gjson.String {
			tools = append(tools, toolSpec{name: f.Get("name").String(), params: f.Get("parameters")})
			i, last = end-1, end
			continue
		}
		p := v.Get("parameters")
		if v.Get("name").Type == gjson.String && p.IsObject() && (p.Get("properties").Exists() || p.Get("type").Exists()) {
			tools = append(tools, toolSpec{name: v.Get("name").String(), params: p})
			i, last = end-1, end
		}
	}
	return tools, last
}

// jsonObjectEnd returns the index just past the object that starts at s[i] == '{' (strings
// skipped), or -1 when it does not close.
func jsonObjectEnd(s string, i int) int {
	depth, inStr := 0, false
	for j := i; j < len(s); j++ {
		ch := s[j]
		switch {
		case inStr && ch == '\\':
			j++
		case inStr:
			inStr = ch != '"'
		case ch == '"':
			inStr = true
		case ch == '{':
			depth++
		case ch == '}':
			depth--
			if depth == 0 {
				return j + 1
			}
		}
	}
	return -1
}
