package render

// This file keeps FromResponses as it was before items were parsed by parseItem and cached
// (commit ed5d20f), verbatim but for the names. FuzzResponsesMatchReference checks that the
// current implementation gives the same messages and the same errors on any input.

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// refFromResponses is FromResponses before parseItem.
func refFromResponses(in ResponsesInput) (*Conversation, error) {
	conv := &Conversation{}
	tools, skipped, err := ParseResponsesTools(in.Tools)
	if err != nil {
		return nil, err
	}
	conv.Tools, conv.SkippedTools = tools, skipped
	if in.Instructions != "" {
		conv.Messages = append(conv.Messages, Message{Role: "system", Content: in.Instructions})
	}
	b := refBuilder{conv: conv}
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

// refBuilder folds items into messages. When openSet, conv.Messages[open] is the assistant
// message that following function_call items attach to; reasoning holds the texts waiting for
// the next assistant turn (hasReason: at least one).
type refBuilder struct {
	conv      *Conversation
	open      int
	openSet   bool
	reasoning []string
	hasReason bool
}

func (b *refBuilder) closeTurn() { b.openSet = false }

func (b *refBuilder) takeReasoning() *string {
	if !b.hasReason {
		return nil
	}
	s := strings.Join(b.reasoning, "\n")
	b.reasoning, b.hasReason = nil, false
	return &s
}

func (b *refBuilder) add(item gjson.Result, param string) error {
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

func (b *refBuilder) addMessage(item gjson.Result, param string) error {
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
	content, err := refResponsesContent(item.Get("content"), param+".content")
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

// dropReasoning forgets reasoning that no assistant turn followed (see refFromResponses).
func (b *refBuilder) dropReasoning() { b.reasoning, b.hasReason = nil, false }

func (b *refBuilder) addCall(item gjson.Result, param string) error {
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
		Role: "assistant", NullContent: true, ToolCalls: []ToolCall{call}, Reasoning: b.takeReasoning(),
	})
	b.open, b.openSet = len(b.conv.Messages)-1, true
	return nil
}

func (b *refBuilder) addOutput(item gjson.Result, param string) error {
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
		text, err = refResponsesContent(out, param+".output")
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

func (b *refBuilder) addReasoning(item gjson.Result, param string) error {
	texts, err := refPartTexts(item.Get("content"), param+".content", "reasoning_text", "text")
	if err != nil {
		return err
	}
	if texts == nil {
		texts, err = refPartTexts(item.Get("summary"), param+".summary", "summary_text", "text")
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

// refPartTexts reads a reasoning item's content or summary list: null/absent → nil.
func refPartTexts(list gjson.Result, param, wantType, field string) ([]string, error) {
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

// refResponsesContent reads a message's content: a string, or a list of parts of which
// input_text / output_text (their text) and refusal (its refusal) are kept, joined with "\n".
func refResponsesContent(c gjson.Result, param string) (string, error) {
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
