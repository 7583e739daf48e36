package render

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/stitchllm/stitch/render/jinja"
)

// This file is the only one that knows render/jinja: it turns templateVars into template
// variables the way transformers' render call does:
// render(messages=…, tools=…, documents=…, add_generation_prompt=…, **special_tokens_map,
// **chat_template_kwargs).

type compiledTemplate interface {
	// execute renders v; with memo non-nil it records into *memo and replays from the memo it
	// holds on entry (see jinja.Template.ExecuteMemo).
	execute(v *templateVars, memo **templateMemo) (string, error)
	// loopsOverContent reports whether vLLM would detect the openai content format.
	loopsOverContent() bool
}

// templateMemo is what a render leaves for a later render of a longer conversation: the
// engine's memo and the template values built for each message, reused for messages that are
// unchanged so that the engine finds them identical (and cheap to compare).
type templateMemo struct {
	engine *jinja.Memo
	msgs   []Message
	format ContentFormat
	values []jinja.Value
	// A copy of the render's tools (a caller may reuse its slice) and their template value
	// (hasTools: tools were not None).
	toolList   []Tool
	toolsValue jinja.Value
	hasTools   bool
}

// sameTools reports whether a and b are equal (byte for byte; the item cache hands every turn the
// same parsed tools, whose strings and schemas then compare by pointer).
func sameTools(a, b []Tool) bool {
	if len(a) != len(b) {
		return false
	}
	return slices.EqualFunc(a, b, func(x, y Tool) bool {
		return x.Name == y.Name && sameOptional(x.Description, y.Description) &&
			(x.Parameters == nil) == (y.Parameters == nil) && bytes.Equal(x.Parameters, y.Parameters) &&
			sameFields(x.FunctionExtra, y.FunctionExtra) && sameFields(x.Extra, y.Extra)
	})
}

func sameFields(a, b []Field) bool {
	return (a == nil) == (b == nil) && slices.EqualFunc(a, b, func(x, y Field) bool {
		return x.Key == y.Key && bytes.Equal(x.Value, y.Value)
	})
}

type jinjaTemplate struct {
	t     *jinja.Template
	tools *valueCache
}

func compileTemplate(name, source string, opts Options) (compiledTemplate, error) {
	t, err := jinja.Parse(name, source, jinja.Options{Now: opts.Now, Fuel: opts.Fuel})
	if err != nil {
		return nil, err
	}
	return jinjaTemplate{t: t, tools: newValueCache(toolsCacheSize)}, nil
}

// toolsCacheSize bounds the decoded tool lists kept per template. Agents resend the same tools
// every turn (Codex: tens of KB), and decoding them is the largest part of a render's input work.
const toolsCacheSize = 32

// valueCache keeps decoded JSON values by their text, per tenant (ChatRequest.Tenant): a hit
// skips the decoding, and one tenant must not be able to time what another sent. jinja Values
// are immutable, so one value is safely shared by concurrent renders. Eviction is FIFO over all
// tenants' entries; safe for concurrent use.
type valueCache struct {
	mu    sync.Mutex
	m     map[string]map[string]jinja.Value // by tenant, then text
	order []valueKey
	max   int
}

type valueKey struct{ tenant, text string }

func newValueCache(max int) *valueCache {
	return &valueCache{m: make(map[string]map[string]jinja.Value), max: max}
}

func (c *valueCache) get(tenant string, text []byte) (jinja.Value, error) {
	c.mu.Lock()
	v, ok := c.m[tenant][string(text)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := jinja.FromJSON(text)
	if err != nil {
		return jinja.Value{}, err
	}
	key := valueKey{tenant, string(text)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[tenant][key.text]; !ok {
		if len(c.order) == c.max {
			old := c.order[0]
			delete(c.m[old.tenant], old.text)
			if len(c.m[old.tenant]) == 0 {
				delete(c.m, old.tenant)
			}
			c.order = c.order[1:]
		}
		if c.m[tenant] == nil {
			c.m[tenant] = make(map[string]jinja.Value)
		}
		c.m[tenant][key.text] = v
		c.order = append(c.order, key)
	}
	return v, nil
}

func (j jinjaTemplate) loopsOverContent() bool { return j.t.LoopsOverMessageContent() }

func (j jinjaTemplate) execute(v *templateVars, memo **templateMemo) (string, error) {
	vars := make(map[string]jinja.Value, 4+len(v.specials)+len(v.kwargs))
	for _, s := range v.specials {
		if !s.list {
			vars[s.name] = jinja.String(s.value)
			continue
		}
		items := make([]jinja.Value, len(s.values))
		for i, x := range s.values {
			items[i] = jinja.String(x)
		}
		vars[s.name] = jinja.List(items...)
	}
	for _, kw := range v.kwargs {
		val, err := jinja.FromJSON(kw.value)
		if err != nil {
			return "", fmt.Errorf("chat_template_kwargs %q: %w", kw.name, err)
		}
		vars[kw.name] = val
	}
	var prev *templateMemo
	if memo != nil {
		prev = *memo
	}
	values, err := messageValues(v.messages, v.format, prev)
	if err != nil {
		return "", err
	}
	vars["messages"] = jinja.List(values...)
	vars["tools"] = jinja.None()
	var toolsValue jinja.Value
	var keptTools []Tool // the memo's copy of v.toolList, when last turn's serves
	if v.toolList != nil {
		if prev != nil && prev.hasTools && sameTools(prev.toolList, v.toolList) {
			// The same parsed tools as last turn (the item cache shares them): no JSON again,
			// and the memo keeps last turn's copy of them.
			toolsValue, keptTools = prev.toolsValue, prev.toolList
		} else if toolsValue, err = j.tools.get(v.tenant, appendToolsJSON(nil, v.toolList)); err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
		vars["tools"] = toolsValue
	}
	vars["documents"] = jinja.None()
	if v.documents != nil {
		if vars["documents"], err = jinja.FromJSON(v.documents); err != nil {
			return "", fmt.Errorf("documents: %w", err)
		}
	}
	vars["add_generation_prompt"] = jinja.Bool(v.addGenerationPrompt)
	if memo == nil {
		return j.t.Execute(vars)
	}
	var engine *jinja.Memo
	if prev != nil {
		engine = prev.engine
	}
	text, next, err := j.t.ExecuteMemo(vars, engine)
	if keptTools == nil {
		keptTools = slices.Clone(v.toolList)
	}
	*memo = &templateMemo{engine: next, msgs: v.messages, format: v.format, values: values,
		toolList: keptTools, toolsValue: toolsValue, hasTools: v.toolList != nil}
	return text, err
}

// messageValues builds the template values of msgs, taking those of messages equal to prev's at
// the same position from prev.
func messageValues(msgs []Message, format ContentFormat, prev *templateMemo) ([]jinja.Value, error) {
	items := make([]jinja.Value, len(msgs))
	for i := range msgs {
		if prev != nil && prev.format == format && i < len(prev.msgs) && sameMessage(&msgs[i], &prev.msgs[i]) {
			items[i] = prev.values[i]
			continue
		}
		v, err := messageValue(i, &msgs[i], format)
		if err != nil {
			return nil, err
		}
		items[i] = v
	}
	return items, nil
}

// sameMessage reports whether a and b are equal (a content string shared between turns compares
// by pointer, and so do parts and tool calls: slices with the same elements in the same memory
// are equal without looking at them). A resumed conversation's messages are usually the previous
// turn's own (render.ItemsPrefix shares them): the same message, not read at all.
func sameMessage(a, b *Message) bool {
	return a == b || a.Role == b.Role && a.Content == b.Content && a.NullContent == b.NullContent &&
		(a.Parts == nil) == (b.Parts == nil) && (sameElements(a.Parts, b.Parts) || slices.Equal(a.Parts, b.Parts)) &&
		sameOptional(a.Reasoning, b.Reasoning) && sameOptional(a.ToolCallID, b.ToolCallID) &&
		sameOptional(a.Name, b.Name) && sameOptional(a.Task, b.Task) &&
		(sameElements(a.ToolCalls, b.ToolCalls) || slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y ToolCall) bool {
			return x.ID == y.ID && x.Type == y.Type && x.Name == y.Name && bytes.Equal(x.Arguments, y.Arguments)
		}))
}

// sameElements reports whether a and b are the same elements in the same memory (a resumed
// conversation, render.ItemsPrefix, shares its messages' parts and tool calls with the previous
// turn's).
func sameElements[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

func sameOptional(a, b *string) bool { return a == b || a != nil && b != nil && *a == *b }

// messageValue builds messages[i] of the template's `messages` the way vLLM's
// parse_chat_messages leaves them (vllm/entrypoints/chat_utils.py _parse_chat_message_content,
// _postprocess_messages): {"role","content","tool_calls"?,"reasoning"?,"reasoning_content"?,
// "tool_call_id"?,"name"?,"task"?,"tools"? (developer)} in that key order; tool calls
// {"id","function":{"arguments","name"},"type"}. Only tool-call arguments go through JSON
// (templateArguments, FromJSON).
func messageValue(i int, m *Message, format ContentFormat) (jinja.Value, error) {
	mp := jinja.NewMapSize(messageKeys(m))
	mp.Set("role", jinja.String(m.Role))
	content, err := contentValue(i, m, format)
	if err != nil {
		return jinja.Value{}, err
	}
	mp.Set("content", content)
	if m.Role == "assistant" {
		// vLLM drops an empty tool_calls list so templates take the plain assistant path.
		if len(m.ToolCalls) > 0 {
			calls := make([]jinja.Value, len(m.ToolCalls))
			for j := range m.ToolCalls {
				c := &m.ToolCalls[j]
				args, err := jinja.FromJSON(templateArguments(c.Arguments))
				if err != nil {
					return jinja.Value{}, fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: %w", i, j, err)
				}
				// Key order as vLLM's request validation leaves it: pydantic rebuilds the
				// openai TypedDicts in declaration order, {"id","function":{"arguments",
				// "name"},"type"}, and _postprocess_messages replaces arguments in place.
				fn := jinja.NewMapSize(2)
				fn.Set("arguments", args)
				fn.Set("name", jinja.String(c.Name))
				call := jinja.NewMapSize(3)
				if c.ID != "" {
					call.Set("id", jinja.String(c.ID))
				}
				call.Set("function", jinja.MapValue(fn))
				if c.Type != "" {
					call.Set("type", jinja.String(c.Type))
				}
				calls[j] = jinja.MapValue(call)
			}
			mp.Set("tool_calls", jinja.List(calls...))
		}
		if m.Reasoning != nil {
			mp.Set("reasoning", jinja.String(*m.Reasoning))
			mp.Set("reasoning_content", jinja.String(*m.Reasoning))
		}
	}
	if m.Role == "tool" && m.ToolCallID != nil {
		mp.Set("tool_call_id", jinja.String(*m.ToolCallID))
	}
	if m.Name != nil {
		mp.Set("name", jinja.String(*m.Name))
	}
	if m.Task != nil {
		mp.Set("task", jinja.String(*m.Task))
	}
	if m.Role == "developer" {
		// vLLM sets a developer message's own tools (message.get("tools", None)); stitch
		// does not read them, so the template sees None.
		mp.Set("tools", jinja.None())
	}
	return jinja.MapValue(mp), nil
}

// messageKeys is the number of keys messageValue sets for m.
func messageKeys(m *Message) int {
	n := 2 // role, content
	switch {
	case m.Role == "assistant":
		if len(m.ToolCalls) > 0 {
			n++
		}
		if m.Reasoning != nil {
			n += 2
		}
	case m.Role == "tool" && m.ToolCallID != nil, m.Role == "developer":
		n++
	}
	if m.Name != nil {
		n++
	}
	if m.Task != nil {
		n++
	}
	return n
}

// contentValue is a message's content as the template sees it in format.
func contentValue(i int, m *Message, format ContentFormat) (jinja.Value, error) {
	switch {
	case format != ContentOpenAI:
		return jinja.String(m.Content), nil
	case m.Role == "tool":
		s, err := toolContent(m)
		if err != nil {
			return jinja.Value{}, invalid(fmt.Sprintf("messages[%d].content", i), "a tool message's text part is null")
		}
		return jinja.String(s), nil
	case m.NullContent:
		return jinja.List(), nil
	case m.Parts == nil:
		return jinja.List(textPart(jinja.String(m.Content))), nil
	}
	parts := make([]jinja.Value, len(m.Parts))
	for j, p := range m.Parts {
		text := jinja.String(p.Text)
		if p.Null {
			text = jinja.None()
		}
		parts[j] = textPart(text)
	}
	return jinja.List(parts...), nil
}

// textPart is vLLM's wrapped text part, {"type": "text", "text": text}.
func textPart(text jinja.Value) jinja.Value {
	mp := jinja.NewMapSize(2)
	mp.Set("type", jinja.String("text"))
	mp.Set("text", text)
	return jinja.MapValue(mp)
}
