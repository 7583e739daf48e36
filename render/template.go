package render

import (
	"fmt"
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
}

// templateMemo is the engine's record of a render that a later render may replay from.
type templateMemo = jinja.Memo

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

// valueCache keeps decoded JSON values by their text. jinja Values are immutable, so one value is
// safely shared by concurrent renders. Eviction is FIFO; safe for concurrent use.
type valueCache struct {
	mu    sync.Mutex
	m     map[string]jinja.Value
	order []string
	max   int
}

func newValueCache(max int) *valueCache {
	return &valueCache{m: make(map[string]jinja.Value, max), max: max}
}

func (c *valueCache) get(text []byte) (jinja.Value, error) {
	c.mu.Lock()
	v, ok := c.m[string(text)]
	c.mu.Unlock()
	if ok {
		return v, nil
	}
	v, err := jinja.FromJSON(text)
	if err != nil {
		return jinja.Value{}, err
	}
	key := string(text)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.m[key]; !ok {
		if len(c.order) == c.max {
			delete(c.m, c.order[0])
			c.order = c.order[1:]
		}
		c.m[key] = v
		c.order = append(c.order, key)
	}
	return v, nil
}

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
	msgs, err := messagesValue(v.messages)
	if err != nil {
		return "", err
	}
	vars["messages"] = msgs
	vars["tools"] = jinja.None()
	if v.tools != nil {
		if vars["tools"], err = j.tools.get(v.tools); err != nil {
			return "", fmt.Errorf("tools: %w", err)
		}
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
	text, next, err := j.t.ExecuteMemo(vars, *memo)
	*memo = next
	return text, err
}

// messagesValue builds the template's `messages` the way vLLM's parse_chat_messages leaves them:
// {"role","content","tool_calls"?,"reasoning"?,"reasoning_content"?,"tool_call_id"?,"name"?} in
// that key order; tool calls {"id","function":{"arguments","name"},"type"}. Only tool-call arguments go through JSON (templateArguments, FromJSON).
func messagesValue(msgs []Message) (jinja.Value, error) {
	items := make([]jinja.Value, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		mp := jinja.NewMap()
		mp.Set("role", jinja.String(m.Role))
		mp.Set("content", jinja.String(m.Content))
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
					fn := jinja.NewMap()
					fn.Set("arguments", args)
					fn.Set("name", jinja.String(c.Name))
					call := jinja.NewMap()
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
		items[i] = jinja.MapValue(mp)
	}
	return jinja.List(items...), nil
}
