package render

import (
	"fmt"

	"github.com/stitchllm/stitch/render/jinja"
)

// This file is the only one that knows render/jinja: it turns templateVars (ordered JSON text)
// into template variables the way transformers' render call does:
// render(messages=…, tools=…, documents=…, add_generation_prompt=…, **special_tokens_map,
// **chat_template_kwargs).

type compiledTemplate interface {
	execute(v *templateVars) (string, error)
}

type jinjaTemplate struct{ t *jinja.Template }

func compileTemplate(name, source string, opts Options) (compiledTemplate, error) {
	t, err := jinja.Parse(name, source, jinja.Options{Now: opts.Now, Fuel: opts.Fuel})
	if err != nil {
		return nil, err
	}
	return jinjaTemplate{t}, nil
}

func (j jinjaTemplate) execute(v *templateVars) (string, error) {
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
	msgs, err := jinja.FromJSON(v.messages)
	if err != nil {
		return "", fmt.Errorf("messages: %w", err)
	}
	vars["messages"] = msgs
	vars["tools"] = jinja.None()
	if v.tools != nil {
		if vars["tools"], err = jinja.FromJSON(v.tools); err != nil {
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
	return j.t.Execute(vars)
}
