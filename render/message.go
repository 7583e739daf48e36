package render

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// Message is one chat message as vLLM's chat path hands it to the chat template, after its
// content normalization. Content is the "string" content format's text (None → "", the texts of
// an array's parts joined with "\n", empty and null parts dropped); Parts and NullContent keep
// what the "openai" content format needs (see ContentFormat).
//
// Optional keys are pointers so that "absent" and "empty" stay distinct, as they are for a
// template (`message.name is defined`).
type Message struct {
	// Role is the chat role: system, user, assistant, tool, or any custom role the template knows.
	Role string
	// Content is the text content.
	Content string
	// Parts are the content's text parts in request order when content was an array (non-nil,
	// possibly empty), nil when it was a string or null. Text and refusal parts whose text is
	// null are already left out, as vLLM skips them in both formats.
	Parts []Part
	// NullContent reports that content was null or absent.
	NullContent bool
	// ToolCalls are an assistant's function calls; empty means none (vLLM drops an empty list).
	ToolCalls []ToolCall
	// Reasoning is an assistant's reasoning text; the template sees it as both `reasoning` and
	// `reasoning_content`. Nil means absent (the Qwen3 template then looks for <think> in Content).
	Reasoning *string
	// ToolCallID is a tool message's call id (kept only for role "tool").
	ToolCallID *string
	// Name is the optional participant name.
	Name *string
	// Task is a model-specific task marker (DeepSeek V4) that vLLM passes through when it is a
	// string.
	Task *string
}

// Part is one text part of a message's array content.
type Part struct {
	Text string
	// Null marks an input_text, output_text or thinking part whose text is null: vLLM drops it
	// from the string format but keeps it in the openai format as {"type":"text","text":None}.
	Null bool
}

// ToolCall is one function call of an assistant message.
type ToolCall struct {
	// ID is the call id ("" = absent).
	ID string
	// Type is the call type, "function" ("" = absent).
	Type string
	// Name is the function name.
	Name string
	// Arguments is the raw JSON value given by the client: usually a JSON string holding the
	// arguments object, or an object. It is never decoded into Go numbers; the renderer parses it
	// the way vLLM does (json.loads of a string, {} when invalid, empty or null).
	Arguments json.RawMessage
}

// Tool is a function tool as the template sees it:
// {"type":"function","function":{"name","description","parameters",…FunctionExtra},…Extra}.
type Tool struct {
	Name string
	// Description is nil when absent (the template then sees null).
	Description *string
	// Parameters is the raw JSON schema, byte for byte as the client sent it; nil when absent
	// (the template then sees null).
	Parameters json.RawMessage
	// FunctionExtra are the function object's other keys (e.g. "strict") and Extra the tool
	// object's keys other than type and function, in request order. vLLM's pydantic request
	// models keep unknown keys (extra="allow") and dump them after the declared ones, so a
	// template printing `tool | tojson` shows them. Only ParseChatTools fills them: Responses
	// tools map to the minimal chat form.
	FunctionExtra []Field
	Extra         []Field
}

// Field is one JSON object member, its value kept as raw bytes.
type Field struct {
	Key   string
	Value json.RawMessage
}

// extraFields returns obj's members whose keys are not in known, in order.
func extraFields(obj gjson.Result, known ...string) []Field {
	var out []Field
	obj.ForEach(func(k, v gjson.Result) bool {
		for _, kn := range known {
			if k.Str == kn {
				return true
			}
		}
		out = append(out, Field{Key: k.Str, Value: json.RawMessage(v.Raw)})
		return true
	})
	return out
}

// ParseChatMessages reads a chat-completions `messages` array (JSON) and applies vLLM's
// content normalization. Tool-call arguments may be a JSON string or an object; assistant
// reasoning may be given as `reasoning` or `reasoning_content`. Errors carry the param path
// ("messages[2].content[0].type").
func ParseChatMessages(raw []byte) ([]Message, error) {
	if !gjson.ValidBytes(raw) {
		return nil, invalid("messages", "not valid JSON")
	}
	arr := gjson.ParseBytes(raw)
	if !arr.IsArray() {
		return nil, invalid("messages", "must be an array")
	}
	var out []Message
	var err error
	i := 0
	arr.ForEach(func(_, m gjson.Result) bool {
		var msg Message
		msg, err = parseChatMessage(m, fmt.Sprintf("messages[%d]", i))
		if err != nil {
			return false
		}
		out = append(out, msg)
		i++
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func parseChatMessage(m gjson.Result, param string) (Message, error) {
	if !m.IsObject() {
		return Message{}, invalid(param, "must be an object")
	}
	role := m.Get("role")
	if role.Type != gjson.String {
		return Message{}, invalid(param+".role", "must be a string")
	}
	msg := Message{Role: role.Str}
	var err error
	if msg.Content, msg.Parts, msg.NullContent, err = chatContent(m.Get("content"), param+".content"); err != nil {
		return Message{}, err
	}
	if name := m.Get("name"); name.Type == gjson.String {
		s := name.Str
		msg.Name = &s
	}
	if task := m.Get("task"); task.Type == gjson.String {
		s := task.Str
		msg.Task = &s
	}
	switch msg.Role {
	case "assistant":
		r := m.Get("reasoning")
		if !r.Exists() || r.Type == gjson.Null {
			r = m.Get("reasoning_content")
		}
		switch r.Type {
		case gjson.String:
			s := r.Str
			msg.Reasoning = &s
		case gjson.Null:
		default:
			return Message{}, invalid(param+".reasoning", "must be a string")
		}
		tcs := m.Get("tool_calls")
		if tcs.Exists() && tcs.Type != gjson.Null {
			if !tcs.IsArray() {
				return Message{}, invalid(param+".tool_calls", "must be an array")
			}
			j := 0
			tcs.ForEach(func(_, tc gjson.Result) bool {
				var call ToolCall
				call, err = parseChatToolCall(tc, fmt.Sprintf("%s.tool_calls[%d]", param, j))
				if err != nil {
					return false
				}
				msg.ToolCalls = append(msg.ToolCalls, call)
				j++
				return true
			})
			if err != nil {
				return Message{}, err
			}
		}
	case "tool":
		if id := m.Get("tool_call_id"); id.Type == gjson.String {
			s := id.Str
			msg.ToolCallID = &s
		}
	}
	return msg, nil
}

func parseChatToolCall(tc gjson.Result, param string) (ToolCall, error) {
	if !tc.IsObject() {
		return ToolCall{}, invalid(param, "must be an object")
	}
	fn := tc.Get("function")
	if !fn.IsObject() {
		return ToolCall{}, invalid(param+".function", "must be an object")
	}
	name := fn.Get("name")
	if name.Type != gjson.String {
		return ToolCall{}, invalid(param+".function.name", "must be a string")
	}
	call := ToolCall{Name: name.Str}
	if id := tc.Get("id"); id.Type == gjson.String {
		call.ID = id.Str
	}
	if typ := tc.Get("type"); typ.Type == gjson.String {
		call.Type = typ.Str
	}
	if args := fn.Get("arguments"); args.Exists() {
		call.Arguments = json.RawMessage(args.Raw)
	}
	return call, nil
}

// chatContent reads a message's content as vLLM's _parse_chat_message_content does: None → ""
// (null true), a string as is, an array's text-like parts in order (parts). text is the string
// content format: the parts' texts joined with "\n" after dropping falsy ones (vLLM keeps a
// part only `if parse_res`, so `["a", "", "b"]` gives "a\nb"). Text and refusal parts without
// text are skipped in both formats.
func chatContent(c gjson.Result, param string) (text string, parts []Part, null bool, err error) {
	switch {
	case !c.Exists() || c.Type == gjson.Null:
		return "", nil, true, nil
	case c.Type == gjson.String:
		return c.Str, nil, false, nil
	case !c.IsArray():
		return "", nil, false, invalid(param, "must be a string, an array of parts or null")
	}
	parts = []Part{}
	var texts []string
	j := 0
	c.ForEach(func(_, part gjson.Result) bool {
		p := fmt.Sprintf("%s[%d]", param, j)
		j++
		if part.Type == gjson.String {
			parts = append(parts, Part{Text: part.Str})
			return true
		}
		if !part.IsObject() {
			err = invalid(p, "must be an object or a string")
			return false
		}
		typ := part.Get("type")
		if typ.Type != gjson.String {
			err = invalid(p+".type", "must be a string")
			return false
		}
		var field string
		skipNull := false // vLLM's PART_TYPES_TO_SKIP_NONE_CONTENT
		switch typ.Str {
		case "text":
			field, skipNull = "text", true
		case "input_text", "output_text":
			field = "text"
		case "refusal":
			field, skipNull = "refusal", true
		case "thinking":
			field = "thinking"
		case "image_url", "input_image", "input_audio", "audio_url", "video_url", "input_file", "file",
			"image_embeds", "audio_embeds", "prompt_embeds", "image_pil", "tool_reference":
			err = unsupported(p+".type", "content part type %q is not supported (text-only renderer)", typ.Str)
			return false
		default:
			err = invalid(p+".type", "unknown content part type %q", typ.Str)
			return false
		}
		switch t := part.Get(field); t.Type {
		case gjson.String:
			parts = append(parts, Part{Text: t.Str})
		case gjson.Null:
			if !skipNull {
				parts = append(parts, Part{Null: true})
			}
		default:
			err = invalid(p+"."+field, "must be a string")
			return false
		}
		return true
	})
	if err != nil {
		return "", nil, false, err
	}
	for _, pt := range parts {
		if !pt.Null && pt.Text != "" {
			texts = append(texts, pt.Text)
		}
	}
	return strings.Join(texts, "\n"), parts, false, nil
}

// ParseChatTools reads a chat-completions `tools` array:
// [{"type":"function","function":{"name","description","parameters","strict"}}]. Parameters are
// kept as raw bytes.
func ParseChatTools(raw []byte) ([]Tool, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	if !gjson.ValidBytes(raw) {
		return nil, invalid("tools", "not valid JSON")
	}
	arr := gjson.ParseBytes(raw)
	if arr.Type == gjson.Null {
		return nil, nil
	}
	if !arr.IsArray() {
		return nil, invalid("tools", "must be an array")
	}
	// An empty array stays an empty list: vLLM passes `tools: []` to the template as [] (None
	// only when the request has no tools).
	out := []Tool{}
	var err error
	i := 0
	arr.ForEach(func(_, t gjson.Result) bool {
		p := fmt.Sprintf("tools[%d]", i)
		i++
		if !t.IsObject() {
			err = invalid(p, "must be an object")
			return false
		}
		if typ := t.Get("type"); typ.Exists() && typ.Str != "function" {
			err = unsupported(p+".type", "tool type %q is not supported on the chat path", typ.String())
			return false
		}
		var tool Tool
		fn := t.Get("function")
		tool, err = parseFunction(fn, p+".function")
		if err != nil {
			return false
		}
		tool.FunctionExtra = extraFields(fn, "name", "description", "parameters")
		tool.Extra = extraFields(t, "type", "function")
		out = append(out, tool)
		return true
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// parseFunction reads {name, description, parameters} (Responses flat tools and chat
// `function` objects share these keys).
func parseFunction(f gjson.Result, param string) (Tool, error) {
	if !f.IsObject() {
		return Tool{}, invalid(param, "must be an object")
	}
	name := f.Get("name")
	if name.Type != gjson.String {
		return Tool{}, invalid(param+".name", "must be a string")
	}
	tool := Tool{Name: name.Str}
	switch d := f.Get("description"); d.Type {
	case gjson.String:
		s := d.Str
		tool.Description = &s
	case gjson.Null:
	default:
		return Tool{}, invalid(param+".description", "must be a string")
	}
	switch p := f.Get("parameters"); {
	case !p.Exists() || p.Type == gjson.Null:
	case p.IsObject():
		tool.Parameters = json.RawMessage(p.Raw)
	default:
		return Tool{}, invalid(param+".parameters", "must be an object")
	}
	return tool, nil
}

// ParseChatRequest reads one chat request in the chat-completions shape (the input of
// `stitch render`): {"messages":[…], "tools":[…], "add_generation_prompt":true,
// "continue_final_message":false, "chat_template_kwargs":{…}, "documents":[…]}.
// add_generation_prompt defaults to true, as in vLLM. Unknown keys are ignored.
func ParseChatRequest(line []byte) (ChatRequest, error) {
	if !gjson.ValidBytes(line) {
		return ChatRequest{}, invalid("", "not valid JSON")
	}
	r := gjson.ParseBytes(line)
	if !r.IsObject() {
		return ChatRequest{}, invalid("", "must be a JSON object")
	}
	req := ChatRequest{AddGenerationPrompt: true}
	msgs := r.Get("messages")
	if !msgs.IsArray() {
		return ChatRequest{}, invalid("messages", "must be an array")
	}
	var err error
	if req.Messages, err = ParseChatMessages([]byte(msgs.Raw)); err != nil {
		return ChatRequest{}, err
	}
	if t := r.Get("tools"); t.Exists() {
		if req.Tools, err = ParseChatTools([]byte(t.Raw)); err != nil {
			return ChatRequest{}, err
		}
	}
	for _, b := range []struct {
		key string
		dst *bool
	}{{"add_generation_prompt", &req.AddGenerationPrompt}, {"continue_final_message", &req.ContinueFinalMessage}} {
		switch v := r.Get(b.key); v.Type {
		case gjson.True, gjson.False:
			*b.dst = v.Bool()
		case gjson.Null:
		default:
			return ChatRequest{}, invalid(b.key, "must be a boolean")
		}
	}
	if kw := r.Get("chat_template_kwargs"); kw.Exists() && kw.Type != gjson.Null {
		req.ChatTemplateKwargs = json.RawMessage(kw.Raw)
	}
	if d := r.Get("documents"); d.Exists() && d.Type != gjson.Null {
		req.Documents = json.RawMessage(d.Raw)
	}
	return req, nil
}
