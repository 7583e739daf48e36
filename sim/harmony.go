package sim

import (
	"math/rand/v2"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/stitchllm/stitch/internal/jsonappend"
)

// Harmony markup (gpt-oss), as openai_harmony renders conversations and the model answers in
// them (https://github.com/openai/harmony/blob/main/docs/format.md; the ids are render/harmony's).
const (
	hStart     = "<|start|>"
	hChannel   = "<|channel|>"
	hMessage   = "<|message|>"
	hEnd       = "<|end|>"
	hCall      = "<|call|>"
	hReturn    = "<|return|>"
	hConstrain = "<|constrain|>"
)

// harmonyMarkers are the tokens a Harmony tokenizer must have.
var harmonyMarkers = []string{hStart, hChannel, hMessage, hEnd, hCall, hReturn, hConstrain}

// harmonyDialect reads Harmony prompts. Its answers end with <|return|> (a final answer) or
// <|call|> (a tool call; vLLM stops on it through stop_token_ids).
var harmonyDialect = dialect{name: "harmony", chatEnd: hReturn, textEnd: "<|endoftext|>", parse: parseHarmony}

// parseHarmony reads <|start|>role[ to=X]<|channel|>ch[ to=X][ <|constrain|>c]<|message|>…<|end|>
// messages. A tool's output (role functions.NAME) is a tool turn; function tools come from the
// developer message's TypeScript namespace. A prompt ending in "<|start|>assistant…" without a
// closing marker is open; the prefill is what follows the role.
func parseHarmony(text string) conversation {
	var c conversation
	for {
		i := strings.Index(text, hStart)
		if i < 0 {
			break
		}
		text = text[i+len(hStart):]
		header, rest, hasMsg := strings.Cut(text, hMessage)
		if next := strings.Index(text, hStart); !hasMsg || (next >= 0 && next < len(header)) {
			// A header without a message: only the generation prompt may end like that.
			if next < 0 && strings.HasPrefix(text, "assistant") {
				c.open, c.prefill = true, strings.TrimPrefix(text, "assistant")
			}
			if next < 0 {
				break
			}
			text = text[next:]
			continue
		}
		role, _, _ := strings.Cut(header, hChannel)
		role, _, _ = strings.Cut(role, " ")
		end := len(rest)
		for _, m := range []string{hEnd, hCall, hReturn} {
			if j := strings.Index(rest, m); j >= 0 && j < end {
				end = j
			}
		}
		if end == len(rest) {
			if role == "assistant" {
				c.open, c.prefill = true, strings.TrimPrefix(header, "assistant")+hMessage+rest
			}
			break
		}
		if strings.HasPrefix(role, "functions.") {
			role = "tool"
		}
		c.turns = append(c.turns, chatTurn{role: role, content: rest[:end]})
		text = rest[end:]
	}
	for _, t := range c.turns {
		if t.role == "developer" {
			c.tools = append(c.tools, parseTypeScriptTools(t.content)...)
		}
	}
	return c
}

// parseTypeScriptTools reads Harmony's `namespace functions { … }` block: each
// `type NAME = (_: { … }) => any;` becomes a tool whose top-level properties are turned into a
// JSON schema good enough for the scripted arguments (strings, numbers, booleans, string arrays,
// string enums, nested objects as empty objects).
func parseTypeScriptTools(dev string) []toolSpec {
	_, block, ok := strings.Cut(dev, "namespace functions {")
	if !ok {
		return nil
	}
	block, _, _ = strings.Cut(block, "} // namespace functions")
	var tools []toolSpec
	lines := strings.Split(block, "\n")
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		name, ok := strings.CutPrefix(line, "type ")
		if !ok {
			continue
		}
		name, sig, _ := strings.Cut(name, " = ")
		var schema []byte
		if strings.HasPrefix(sig, "()") {
			schema = []byte(`{"type":"object","properties":{}}`)
		} else {
			schema, i = tsObject(lines, i+1)
		}
		tools = append(tools, toolSpec{name: name, params: gjson.ParseBytes(schema)})
	}
	return tools
}

// tsObject converts the properties from lines[i] to the object's closing `}` into a JSON schema;
// it returns the schema and the index of the closing line.
func tsObject(lines []string, i int) ([]byte, int) {
	b := []byte(`{"type":"object","properties":{`)
	var required []string
	n := 0
	for ; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if line == "{" || line == "" || strings.HasPrefix(line, "//") || strings.HasPrefix(line, "|") || line == "," {
			continue
		}
		if strings.HasPrefix(line, "}") {
			break
		}
		key, typ, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		optional := strings.HasSuffix(key, "?")
		key = strings.TrimSuffix(key, "?")
		typ = strings.TrimSpace(typ)
		if j := strings.Index(typ, " //"); j >= 0 {
			typ = typ[:j]
		}
		typ = strings.TrimSuffix(strings.TrimSpace(typ), ",")
		var prop []byte
		switch {
		case strings.HasSuffix(typ, "{"):
			prop, i = tsObject(lines, i+1)
		case strings.HasSuffix(typ, "[]"):
			prop = []byte(`{"type":"array","items":{"type":"string"}}`)
		case strings.HasPrefix(typ, `"`):
			prop = []byte(`{"type":"string","enum":[`)
			for k, lit := range strings.Split(typ, "|") {
				if k > 0 {
					prop = append(prop, ',')
				}
				prop = jsonappend.String(prop, strings.Trim(strings.TrimSpace(lit), `"`))
			}
			prop = append(prop, "]}"...)
		case strings.HasPrefix(typ, "number"):
			prop = []byte(`{"type":"number"}`)
		case strings.HasPrefix(typ, "boolean"):
			prop = []byte(`{"type":"boolean"}`)
		default:
			prop = []byte(`{"type":"string"}`)
		}
		if n > 0 {
			b = append(b, ',')
		}
		n++
		b = jsonappend.String(b, key)
		b = append(b, ':')
		b = append(b, prop...)
		if !optional {
			required = append(required, key)
		}
	}
	b = append(b, `},"required":[`...)
	for k, r := range required {
		if k > 0 {
			b = append(b, ',')
		}
		b = jsonappend.String(b, r)
	}
	return append(b, "]}"...), i
}

// harmonyAnswer writes a gpt-oss answer after the generation prompt: the analysis channel (the
// reasoning, always), then a tool call on the commentary channel addressed to functions.NAME
// (preceded by a commentary preamble when the user asked for several calls: Harmony ends the turn
// at the first <|call|>), or a final answer. It returns the text without its last token and
// whether that token is <|call|> (else <|return|>).
func (m *scriptedModel) harmonyAnswer(conv *conversation, r *rand.Rand) (string, bool) {
	var b strings.Builder
	last := conv.lastTurn()
	toolResult := isToolResult(last)
	var calls []*toolSpec
	if !toolResult && last.role == "user" && len(conv.tools) > 0 {
		calls = pickTools(conv.tools, last.content)
	}
	// A caller that forced the call prefilled its header: write the arguments only.
	if _, after, ok := strings.Cut(conv.prefill, " to=functions."); ok && strings.HasSuffix(conv.prefill, hMessage) && len(conv.tools) > 0 {
		name, _, _ := strings.Cut(after, " ")
		name, _, _ = strings.Cut(name, hConstrain)
		name, _, _ = strings.Cut(name, hMessage)
		call := pickTool(conv.tools, conv.lastUserText())
		for i := range conv.tools {
			if conv.tools[i].name == name {
				call = &conv.tools[i]
			}
		}
		writeArguments(&b, call.params, r, conv.lastUserText())
		return b.String(), true
	}
	// tool_choice required: the caller prefilled "<|channel|>commentary to=functions"; the model
	// names the function and writes the rest of the header.
	if strings.HasSuffix(conv.prefill, " to=functions") && len(conv.tools) > 0 {
		call := pickTool(conv.tools, conv.lastUserText())
		b.WriteString("." + call.name + " " + hConstrain + "json" + hMessage)
		writeArguments(&b, call.params, r, conv.lastUserText())
		return b.String(), true
	}
	if conv.prefill == "" {
		b.WriteString(hChannel + "analysis" + hMessage)
		m.think(&b, r, conv, calls, toolResult)
		b.WriteString(hEnd + hStart + "assistant")
	}
	switch {
	case len(calls) > 0:
		if len(calls) > 1 {
			names := make([]string, len(calls))
			for i, c := range calls {
				names[i] = c.name
			}
			b.WriteString(hChannel + "commentary" + hMessage + "I will call " + strings.Join(names, ", ") + ", one after the other." + hEnd + hStart + "assistant")
		}
		b.WriteString(hChannel + "commentary to=functions." + calls[0].name + " " + hConstrain + "json" + hMessage)
		writeArguments(&b, calls[0].params, r, conv.lastUserText())
		return b.String(), true
	case toolResult:
		b.WriteString(hChannel + "final" + hMessage + "The tool returned: " + quote(toolResultText(last), 200) + ".")
	default:
		b.WriteString(hChannel + "final" + hMessage)
		m.prose.write(&b, r, m.length(r))
	}
	return b.String(), false
}
