// Package synthmodel writes stand-in model directories for the families whose tokenizer is not
// available offline (GLM-4.x, Kimi K2; testdata/models/README.md): the family's real chat
// template over another vocabulary (Qwen3's) with the family's special tokens added, so tests can
// serve, render and parse the family end to end. The texts are the family's; the ids are not
// (ordinary text tokenizes as Qwen3's), so such a directory checks stitch's consistency — a
// canonical continuation equal to a full render, exact mode's splits — never a real model's ids.
package synthmodel

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"
)

// Spec is one stand-in directory.
type Spec struct {
	// Template is the chat template text (tokenizer_config.json's chat_template).
	Template string
	// Tokens are the special tokens the template and the family's parsers write; those the base
	// vocabulary lacks are added as special added tokens after its last id.
	Tokens []string
	// Drop are the base vocabulary's added tokens to remove (renamed; their text becomes ordinary
	// text), so the stand-in does not also look like the base family (ChatML's <|im_start|>).
	Drop []string
	// Config are more tokenizer_config.json keys (eos_token, bos_token, …), written as strings.
	Config map[string]string
	// Stops are generation_config.json's eos_token_id (the model's stop tokens), by text.
	Stops []string
}

// Families are the stand-ins for the families without a tokenizer offline, by the name of their
// template under testdata/render (the folder and file, without ".jinja").
var Families = map[string]Spec{
	"glm4/glm-4.6": {
		Tokens: []string{"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
			"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<|endoftext|>"},
		Drop:   []string{"<|im_start|>"},
		Config: map[string]string{"eos_token": "<|endoftext|>"},
		// GLM-4.6's generation_config.json: eos_token_id [151329, 151336, 151338].
		Stops: []string{"<|endoftext|>", "<|user|>", "<|observation|>"},
	},
	"glm4/glm-4.7-flash": {
		Tokens: []string{"[gMASK]", "<sop>", "<|system|>", "<|user|>", "<|assistant|>", "<|observation|>",
			"<think>", "</think>", "<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>", "<|endoftext|>"},
		Drop:   []string{"<|im_start|>"},
		Config: map[string]string{"eos_token": "<|endoftext|>"},
		Stops:  []string{"<|endoftext|>", "<|user|>", "<|observation|>"},
	},
	// The current Kimi K2 templates (instruct, thinking) call list.append, which Jinja2's immutable
	// sandbox refuses on every tool turn (as in transformers: testdata/render/kimi_k2 goldens);
	// the original kimi-k2 template renders them.
	"kimi_k2/kimi-k2":          kimiSpec,
	"kimi_k2/kimi-k2-thinking": kimiSpec,
}

var kimiSpec = Spec{
	Tokens: []string{"<|im_system|>", "<|im_user|>", "<|im_assistant|>", "<|im_middle|>", "<|im_end|>", "<think>", "</think>",
		"<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>"},
	Drop:   []string{"<|im_start|>"},
	Config: map[string]string{"eos_token": "<|im_end|>"},
	Stops:  []string{"<|im_end|>"},
}

// Write writes dir/tokenizer.json (baseTokenizer's file plus s.Tokens), tokenizer_config.json and
// generation_config.json.
func Write(dir, baseTokenizer string, s Spec) error {
	tok, err := os.ReadFile(baseTokenizer)
	if err != nil {
		return fmt.Errorf("synthmodel: %w", err)
	}
	for n, d := range s.Drop {
		for i, a := range gjson.GetBytes(tok, "added_tokens").Array() {
			if a.Get("content").Str == d {
				// Renamed, not removed: added-token ids stay contiguous, as the loader requires.
				if tok, err = sjson.SetBytes(tok, fmt.Sprintf("added_tokens.%d.content", i), fmt.Sprintf("<|synthmodel_unused_%d|>", n)); err != nil {
					return fmt.Errorf("synthmodel: drop %s: %w", d, err)
				}
				break
			}
		}
	}
	next := int64(0)
	have := map[string]int64{}
	for _, a := range gjson.GetBytes(tok, "added_tokens").Array() {
		have[a.Get("content").Str] = a.Get("id").Int()
		next = max(next, a.Get("id").Int()+1)
	}
	gjson.GetBytes(tok, "model.vocab").ForEach(func(_, v gjson.Result) bool {
		next = max(next, v.Int()+1)
		return true
	})
	ids := map[string]int64{}
	for _, t := range s.Tokens {
		if id, ok := have[t]; ok {
			ids[t] = id
			continue
		}
		entry, err := json.Marshal(map[string]any{"id": next, "content": t, "single_word": false, "lstrip": false,
			"rstrip": false, "normalized": false, "special": true})
		if err != nil {
			return fmt.Errorf("synthmodel: %w", err)
		}
		if tok, err = sjson.SetRawBytes(tok, "added_tokens.-1", entry); err != nil {
			return fmt.Errorf("synthmodel: add %s: %w", t, err)
		}
		ids[t], have[t] = next, next
		next++
	}
	cfg := map[string]string{"chat_template": s.Template}
	for k, v := range s.Config {
		cfg[k] = v
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("synthmodel: %w", err)
	}
	var stops []int64
	for _, t := range s.Stops {
		id, ok := ids[t]
		if !ok {
			return fmt.Errorf("synthmodel: stop token %s is not among the tokens", t)
		}
		stops = append(stops, id)
	}
	gen, err := json.Marshal(map[string]any{"eos_token_id": stops})
	if err != nil {
		return fmt.Errorf("synthmodel: %w", err)
	}
	for name, data := range map[string][]byte{"tokenizer.json": tok, "tokenizer_config.json": cfgJSON, "generation_config.json": gen} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return fmt.Errorf("synthmodel: %w", err)
		}
	}
	return nil
}

// WriteFamily writes the stand-in of Families[name] with the template read from
// renderDir/name.jinja (renderDir: testdata/render).
func WriteFamily(dir, baseTokenizer, renderDir, name string) error {
	s, ok := Families[name]
	if !ok {
		return fmt.Errorf("synthmodel: no stand-in for %s", name)
	}
	t, err := os.ReadFile(filepath.Join(renderDir, name+".jinja"))
	if err != nil {
		return fmt.Errorf("synthmodel: %w", err)
	}
	s.Template = string(t)
	return Write(dir, baseTokenizer, s)
}
