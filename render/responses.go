package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// ResponsesInput is what a Responses request contributes to the chat: its own `instructions`
// (never an earlier response's: OpenAI does not carry instructions over previous_response_id),
// the ordered conversation items (earlier ones from the store, then the request's `input`),
// and the request's `tools` array.
type ResponsesInput struct {
	// Instructions becomes a leading system message when non-empty.
	Instructions string
	// Items are Responses input/output items as raw JSON objects, in conversation order. A
	// request whose `input` is a plain string should pass {"role":"user","content":<string>}.
	Items []json.RawMessage
	// ItemParam returns the OpenAI param path of Items[i] for error messages; nil means
	// "input[i]".
	ItemParam func(i int) string
	// Tools is the raw `tools` array; nil or null means none.
	Tools json.RawMessage
}

// Conversation is the chat form of a Responses request.
type Conversation struct {
	Messages []Message
	// Tools are the function tools (namespace tools flattened), in request order.
	Tools []Tool
	// SkippedTools names tools that are not functions (web_search, file_search, mcp, custom …):
	// they are not shown to the model. The caller should log them.
	SkippedTools []string
}

// FromResponses maps Responses items to chat messages the way a chat-completions client would
// send the same conversation:
//
//   - instructions → a leading system message; role developer → system.
//   - message items (with or without "type") → messages; content parts input_text, output_text
//     and refusal become text joined with "\n"; images, files and audio are ErrUnsupported.
//   - function_call items → the assistant message's tool_calls. Consecutive calls form one
//     assistant turn, and calls directly after an assistant message item attach to it: the model
//     produced them in one generation ("text<tool_call>…</tool_call><tool_call>…"), which is how
//     OpenAI splits one assistant turn into output items. vLLM's own Responses server instead makes
//     one assistant message per call, which renders parallel calls as several assistant turns the
//     model never produced.
//   - function_call_output → a tool message (tool_call_id = call_id).
//   - reasoning items → the reasoning of the next assistant turn (message or tool calls); the
//     content texts (else the summary texts) joined with "\n"; encrypted_content is opaque and
//     never rendered. Reasoning not followed by an assistant item before the next user, system or
//     tool message is dropped: there is no assistant turn to carry it.
//
// Errors are *InputError values carrying the OpenAI param path.
func FromResponses(in ResponsesInput) (*Conversation, error) {
	conv := &Conversation{}
	tools, skipped, err := ParseResponsesTools(in.Tools)
	if err != nil {
		return nil, err
	}
	conv.Tools, conv.SkippedTools = tools, skipped
	if in.Instructions != "" {
		conv.Messages = append(conv.Messages, Message{Role: "system", Content: in.Instructions})
	}
	b := itemBuilder{conv: conv}
	for i, raw := range in.Items {
		param := fmt.Sprintf("input[%d]", i)
		if in.ItemParam != nil {
			param = in.ItemParam(i)
		}
		if !gjson.ValidBytes(raw) {
			return nil, invalid(param, "not valid JSON")
		}
		if err := b.add(gjson.ParseBytes(raw), param); err != nil {
			return nil, err
		}
	}
	return conv, nil
}

// itemBuilder folds items into messages. When openSet, conv.Messages[open] is the assistant
// message that following function_call items attach to; reasoning holds the texts waiting for
// the next assistant turn (hasReason: at least one).
type itemBuilder struct {
	conv      *Conversation
	open      int
	openSet   bool
	reasoning []string
	hasReason bool
}

func (b *itemBuilder) closeTurn() { b.openSet = false }

func (b *itemBuilder) takeReasoning() *string {
	if !b.hasReason {
		return nil
	}
	s := strings.Join(b.reasoning, "\n")
	b.reasoning, b.hasReason = nil, false
	return &s
}

func (b *itemBuilder) add(item gjson.Result, param string) error {
	if !item.IsObject() {
		return invalid(param, "must be an object")
	}
	typ := item.Get("type")
	kind := "message"
	if typ.Exists() {
		if typ.Type != gjson.String {
			return invalid(param+".type", "must be a string")
		}
		kind = typ.Str
	}
	switch kind {
	case "message":
		return b.addMessage(item, param)
	case "function_call":
		return b.addCall(item, param)
	case "function_call_output":
		return b.addOutput(item, param)
	case "reasoning":
		return b.addReasoning(item, param)
	case "item_reference":
		return unsupported(param+".type", "item_reference must be resolved before rendering")
	case "custom_tool_call", "custom_tool_call_output", "local_shell_call", "local_shell_call_output",
		"shell_call", "shell_call_output", "apply_patch_call", "apply_patch_call_output",
		"web_search_call", "file_search_call", "computer_call", "computer_call_output",
		"code_interpreter_call", "image_generation_call", "mcp_call", "mcp_list_tools",
		"mcp_approval_request", "mcp_approval_response", "compaction":
		return unsupported(param+".type", "item type %q is not supported", kind)
	default:
		return invalid(param+".type", "unknown item type %q", kind)
	}
}

func (b *itemBuilder) addMessage(item gjson.Result, param string) error {
	role := item.Get("role")
	if role.Type != gjson.String {
		return invalid(param+".role", "must be a string")
	}
	var r string
	switch role.Str {
	case "user", "system", "assistant":
		r = role.Str
	case "developer":
		r = "system"
	default:
		return invalid(param+".role", "unknown role %q", role.Str)
	}
	content, err := responsesContent(item.Get("content"), param+".content")
	if err != nil {
		return err
	}
	msg := Message{Role: r, Content: content}
	if r == "assistant" {
		msg.Reasoning = b.takeReasoning()
		b.conv.Messages = append(b.conv.Messages, msg)
		b.open, b.openSet = len(b.conv.Messages)-1, true
		return nil
	}
	b.dropReasoning()
	b.conv.Messages = append(b.conv.Messages, msg)
	b.closeTurn()
	return nil
}

// dropReasoning forgets reasoning that no assistant turn followed (see FromResponses).
func (b *itemBuilder) dropReasoning() { b.reasoning, b.hasReason = nil, false }

func (b *itemBuilder) addCall(item gjson.Result, param string) error {
	callID := item.Get("call_id")
	if callID.Type != gjson.String {
		return invalid(param+".call_id", "must be a string")
	}
	name := item.Get("name")
	if name.Type != gjson.String {
		return invalid(param+".name", "must be a string")
	}
	call := ToolCall{ID: callID.Str, Type: "function", Name: name.Str}
	switch args := item.Get("arguments"); args.Type {
	case gjson.String:
		call.Arguments = json.RawMessage(args.Raw)
	case gjson.Null:
		// Absent or null: vLLM renders {}.
	default:
		return invalid(param+".arguments", "must be a string")
	}
	// Reasoning between an assistant item and this call starts a new turn.
	if b.openSet && !b.hasReason {
		m := &b.conv.Messages[b.open]
		m.ToolCalls = append(m.ToolCalls, call)
		return nil
	}
	b.conv.Messages = append(b.conv.Messages, Message{
		Role: "assistant", ToolCalls: []ToolCall{call}, Reasoning: b.takeReasoning(),
	})
	b.open, b.openSet = len(b.conv.Messages)-1, true
	return nil
}

func (b *itemBuilder) addOutput(item gjson.Result, param string) error {
	callID := item.Get("call_id")
	if callID.Type != gjson.String {
		return invalid(param+".call_id", "must be a string")
	}
	out := item.Get("output")
	var text string
	switch {
	case out.Type == gjson.String:
		text = out.Str
	case out.IsArray():
		var err error
		text, err = responsesContent(out, param+".output")
		if err != nil {
			return err
		}
	default:
		return invalid(param+".output", "must be a string or an array of content parts")
	}
	id := callID.Str
	b.dropReasoning()
	b.conv.Messages = append(b.conv.Messages, Message{Role: "tool", Content: text, ToolCallID: &id})
	b.closeTurn()
	return nil
}

func (b *itemBuilder) addReasoning(item gjson.Result, param string) error {
	texts, err := partTexts(item.Get("content"), param+".content", "reasoning_text", "text")
	if err != nil {
		return err
	}
	if texts == nil {
		texts, err = partTexts(item.Get("summary"), param+".summary", "summary_text", "text")
		if err != nil {
			return err
		}
	}
	if texts != nil {
		b.reasoning = append(b.reasoning, strings.Join(texts, "\n"))
		b.hasReason = true
	}
	// The item breaks an open assistant turn: a call after it belongs to a new generation.
	b.closeTurn()
	return nil
}

// partTexts reads a reasoning item's content or summary list: null/absent → nil.
func partTexts(list gjson.Result, param, wantType, field string) ([]string, error) {
	if !list.Exists() || list.Type == gjson.Null {
		return nil, nil
	}
	if !list.IsArray() {
		return nil, invalid(param, "must be an array or null")
	}
	texts := []string{}
	var err error
	j := 0
	list.ForEach(func(_, part gjson.Result) bool {
		p := fmt.Sprintf("%s[%d]", param, j)
		j++
		if !part.IsObject() {
			err = invalid(p, "must be an object")
			return false
		}
		if typ := part.Get("type"); typ.Exists() && typ.Str != wantType {
			err = invalid(p+".type", "unknown part type %q (want %q)", typ.String(), wantType)
			return false
		}
		t := part.Get(field)
		if t.Type != gjson.String {
			err = invalid(p+"."+field, "must be a string")
			return false
		}
		texts = append(texts, t.Str)
		return true
	})
	if err != nil {
		return nil, err
	}
	if len(texts) == 0 {
		return nil, nil
	}
	return texts, nil
}

// responsesContent reads a message's content: a string, or a list of parts of which
// input_text / output_text (their text) and refusal (its refusal) are kept, joined with "\n".
func responsesContent(c gjson.Result, param string) (string, error) {
	switch {
	case c.Type == gjson.String:
		return c.Str, nil
	case !c.Exists() || c.Type == gjson.Null:
		return "", nil
	case !c.IsArray():
		return "", invalid(param, "must be a string or an array of content parts")
	}
	var texts []string
	var err error
	j := 0
	c.ForEach(func(_, part gjson.Result) bool {
		p := fmt.Sprintf("%s[%d]", param, j)
		j++
		if !part.IsObject() {
			err = invalid(p, "must be an object")
			return false
		}
		typ := part.Get("type")
		if typ.Type != gjson.String {
			err = invalid(p+".type", "must be a string")
			return false
		}
		field := "text"
		switch typ.Str {
		case "input_text", "output_text", "text":
		case "refusal":
			field = "refusal"
		case "input_image", "input_file", "input_audio":
			err = unsupported(p+".type", "content part type %q is not supported (text-only renderer)", typ.Str)
			return false
		default:
			err = invalid(p+".type", "unknown content part type %q", typ.Str)
			return false
		}
		t := part.Get(field)
		if t.Type != gjson.String {
			err = invalid(p+"."+field, "must be a string")
			return false
		}
		texts = append(texts, t.Str)
		return true
	})
	if err != nil {
		return "", err
	}
	return strings.Join(texts, "\n"), nil
}

// ParseResponsesTools reads a Responses `tools` array. Function tools
// {type:"function",name,description,parameters,strict} become Tools; namespace tools
// {type:"namespace",name,tools:[…]} (Codex) contribute their functions under their own names;
// every other type is skipped and named in the second result.
func ParseResponsesTools(raw json.RawMessage) ([]Tool, []string, error) {
	if len(raw) == 0 {
		return nil, nil, nil
	}
	if !gjson.ValidBytes(raw) {
		return nil, nil, invalid("tools", "not valid JSON")
	}
	arr := gjson.ParseBytes(raw)
	if arr.Type == gjson.Null {
		return nil, nil, nil
	}
	if !arr.IsArray() {
		return nil, nil, invalid("tools", "must be an array")
	}
	var tools []Tool
	var skipped []string
	var walk func(list gjson.Result, param string, nested bool) error
	walk = func(list gjson.Result, param string, nested bool) error {
		var err error
		i := 0
		list.ForEach(func(_, t gjson.Result) bool {
			p := fmt.Sprintf("%s[%d]", param, i)
			i++
			if !t.IsObject() {
				err = invalid(p, "must be an object")
				return false
			}
			typ := t.Get("type")
			if typ.Type != gjson.String {
				err = invalid(p+".type", "must be a string")
				return false
			}
			switch {
			case typ.Str == "function":
				var tool Tool
				tool, err = parseFunction(t, p)
				if err != nil {
					return false
				}
				tools = append(tools, tool)
			case typ.Str == "namespace" && !nested:
				sub := t.Get("tools")
				if !sub.IsArray() {
					err = invalid(p+".tools", "must be an array")
					return false
				}
				err = walk(sub, p+".tools", true)
				return err == nil
			default:
				skipped = append(skipped, typ.Str)
			}
			return true
		})
		return err
	}
	if err := walk(arr, "tools", false); err != nil {
		return nil, nil, err
	}
	return tools, skipped, nil
}
