package family

import (
	"cmp"
	"crypto/sha256"
	"fmt"
	"strings"
	"unicode"

	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/stream"
)

// profile is what one registry row of a stream.NewFamilyParser family knows beyond the parser
// names: how its chat template closes an assistant turn and which kwargs key switches reasoning.
type profile struct {
	// endOfTurn are the candidate tokens the template closes an assistant message with, first
	// found in the vocabulary wins (a family's models differ: Llama's <|eot_id|>, Gemma's
	// <end_of_turn> for pythonic); none found: the first stop id.
	endOfTurn []string
	// reasoningSwitch is the chat_template_kwargs key (ReasoningSwitch).
	reasoningSwitch string
	// roles are the template's role tokens when it writes none after an assistant message (GLM:
	// the next message's role token follows, and the model stops at it); see RoleOpened.
	roles []string
	// onlyAssistantClosed: the template writes the end-of-turn token only after assistant
	// messages (InputsUnclosed).
	onlyAssistantClosed bool
	// reasoningUnlessOff uses the reasoning parser unless the turn switched reasoning off
	// (Turn.ReasoningOff): vLLM's kimi_k2 reasoning parser reads chat_template_kwargs thinking
	// (default true) and falls back to its identity parser when it is false
	// (vllm/reasoning/kimi_k2_reasoning_parser.py).
	reasoningUnlessOff bool
	// forcedRequired, when set, replaces the tool parser's forced prefix for tool_choice
	// "required" (stream.ForcedToolChoice.Required): Qwen3 opens only the tag, "<tool_call>\n",
	// and the model writes the whole call (Qwen3's forced prefix before the registry held it).
	forcedRequired string
	// reasoningOnlyWhenOpen uses the reasoning parser only on turns whose prompt opened a think
	// block: vLLM's deepseek_v3 reasoning parser delegates to deepseek_r1 only when
	// chat_template_kwargs thinking is true (vllm/reasoning/deepseek_v3_reasoning_parser.py), and
	// DeepSeek V3.1's template ends a thinking generation prompt with <think> (</think> otherwise).
	reasoningOnlyWhenOpen bool
}

// specFamily is a family whose output parser is stream.NewFamilyParser: every registry row but
// openai (Harmony).
type specFamily struct {
	tool      *stream.ToolParserSpec
	reasoning *stream.ReasoningParserSpec
	markers   stream.MarkerIDs
	stop      []uint32
	end       uint32
	prof      profile
	openText  string // the reasoning open marker ("<think>", "[THINK]"); "" without reasoning
	nemoStyle bool   // mistral without [ARGS]: the pre-v11 [TOOL_CALLS][{...}] form
	roles     []uint32
}

var _ Family = (*specFamily)(nil)

// NewCallID implements CallIDMinter for a parser with a fixed id form (ToolParserSpec.CallIDLen):
// alphanumeric characters drawn from a digest of a fresh unique id; call_<random> otherwise.
func (f *specFamily) NewCallID(newID func(prefix string) string) string {
	id := newID("call")
	if f.tool == nil || f.tool.CallIDLen <= 0 {
		return id
	}
	const alnum = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	sum := sha256.Sum256([]byte(id))
	out := make([]byte, min(f.tool.CallIDLen, len(sum)))
	for i := range out {
		out[i] = alnum[int(sum[i])%len(alnum)]
	}
	return string(out)
}

// tokenID looks text up in v (not found when v has no TokenID).
func tokenID(v Vocabulary, text string) (uint32, bool) {
	if v.TokenID == nil {
		return 0, false
	}
	return v.TokenID(text)
}

type lookupFunc func(string) (uint32, bool)

func (f lookupFunc) TokenID(s string) (uint32, bool) {
	if f == nil {
		return 0, false
	}
	return f(s)
}

// newSpecFamily binds a registry row's parsers (newReasoning nil: none) and profile to a vocabulary.
func newSpecFamily(tool *stream.ToolParserSpec, newReasoning func() *stream.ReasoningParserSpec, prof profile, v Vocabulary) (Family, error) {
	var reasoning *stream.ReasoningParserSpec
	if newReasoning != nil {
		reasoning = newReasoning()
	}
	markers, err := stream.ResolveMarkers(lookupFunc(v.TokenID), tool, reasoning)
	if err != nil {
		return nil, err
	}
	f := &specFamily{tool: tool, reasoning: reasoning, markers: markers, stop: v.StopTokenIDs, prof: prof}
	if reasoning != nil && len(reasoning.Markers) > 0 {
		f.openText = reasoning.Markers[0].Token
	}
	if tool.Name == "mistral" {
		_, hasArgs := markers["[ARGS]"]
		f.nemoStyle = !hasArgs
	}
	found := false
	for _, s := range prof.endOfTurn {
		if id, ok := tokenID(v, s); ok {
			f.end, found = id, true
			break
		}
	}
	if !found && len(v.StopTokenIDs) > 0 {
		f.end = v.StopTokenIDs[0]
	}
	for _, s := range prof.roles {
		id, ok := tokenID(v, s)
		if !ok {
			return nil, fmt.Errorf("the vocabulary has no %s, a role token of the chat template", s)
		}
		f.roles = append(f.roles, id)
	}
	return f, nil
}

// NewParser implements Family.
func (f *specFamily) NewParser(dec stream.TokenDecoder, t Turn) stream.OutputParser {
	reasoning := f.reasoning
	if f.prof.reasoningOnlyWhenOpen && !t.ReasoningOpen || f.prof.reasoningUnlessOff && t.ReasoningOff {
		reasoning = nil
	}
	end := append([]uint32(nil), f.stop...)
	p, err := stream.NewFamilyParser(dec, f.tool, reasoning, stream.FamilyOptions{
		Markers:           f.markers,
		EndOfTurn:         end,
		ThinkingOpen:      t.ReasoningOpen && reasoning != nil,
		ParallelToolCalls: t.ParallelToolCalls,
		Tools:             t.Tools,
	})
	if err != nil {
		// The markers were resolved by newSpecFamily against the same specs: unreachable.
		panic("family: " + err.Error())
	}
	return p
}

// StopTokenIDs implements Family.
func (f *specFamily) StopTokenIDs() []uint32 { return f.stop }

// ForcedToolCall implements Family: the tool parser's own forced prefix (stream.ForcedToolChoice);
// a pre-v11 Mistral tokenizer (no [ARGS]: Nemo) is forced in its JSON-list form.
func (f *specFamily) ForcedToolCall(name string) string {
	if f.nemoStyle {
		if name == "" {
			return "[TOOL_CALLS][{\"name\": \""
		}
		return "[TOOL_CALLS][{\"name\": " + string(jsonappend.String(nil, name)) + ", \"arguments\": "
	}
	if name == "" {
		return cmp.Or(f.prof.forcedRequired, f.tool.Forced.Required)
	}
	if f.tool.Forced.Named == nil {
		return ""
	}
	return f.tool.Forced.Named(name)
}

// EndOfTurn implements Family.
func (f *specFamily) EndOfTurn() uint32 { return f.end }

// CloseTurn implements Family: EndOfTurn appended unless the generation ended with it. A
// template that writes no token after an assistant message (RoleTokens) gets none: the role
// token the model stopped at, if any, stays where it is.
func (f *specFamily) CloseTurn(ids []uint32) []uint32 {
	if len(f.roles) > 0 {
		return ids
	}
	if len(ids) == 0 || ids[len(ids)-1] != f.end {
		ids = append(ids, f.end)
	}
	return ids
}

// OnlyAssistantClosed implements InputsUnclosed.
func (f *specFamily) OnlyAssistantClosed() bool { return f.prof.onlyAssistantClosed }

// RoleTokens implements RoleOpened (nil but for GLM).
func (f *specFamily) RoleTokens() []uint32 { return f.roles }

// OpensReasoning implements Family: the prompt ends with the reasoning parser's open marker and
// white space.
func (f *specFamily) OpensReasoning(prompt string) bool {
	if f.openText == "" {
		return false
	}
	return strings.HasSuffix(strings.TrimRightFunc(prompt, unicode.IsSpace), f.openText)
}

// ReasoningSwitch implements Family.
func (f *specFamily) ReasoningSwitch() string { return f.prof.reasoningSwitch }

// The turn structure of each family's chat templates.
var (
	// Qwen3 (the default family, also QwQ): every message ends with <|im_end|>; enable_thinking
	// switches reasoning; a forced call opens only the tag.
	qwen3Profile = profile{endOfTurn: []string{"<|im_end|>"}, reasoningSwitch: "enable_thinking", forcedRequired: "<tool_call>\n"}
	// Qwen2.5, Qwen3-Coder, Qwen3.5: every message ends with <|im_end|>.
	qwenProfile  = profile{endOfTurn: []string{"<|im_end|>"}}
	qwenThinking = profile{endOfTurn: []string{"<|im_end|>"}, reasoningSwitch: "enable_thinking"}
	// Llama 3.1–3.3 (and their pythonic templates) close an assistant turn with <|eot_id|>; Gemma 3
	// (pythonic with vLLM's tool template) with <end_of_turn>.
	llamaProfile = profile{endOfTurn: []string{"<|eot_id|>", "<end_of_turn>"}}
	// Mistral templates end an assistant message with eos_token </s> (and no other message).
	mistralProfile = profile{endOfTurn: []string{"</s>"}, onlyAssistantClosed: true}
	// DeepSeek V3/R1/V3.1 end an assistant message with <｜end▁of▁sentence｜> (and no other).
	deepseekProfile     = profile{endOfTurn: []string{"<｜end▁of▁sentence｜>"}, onlyAssistantClosed: true}
	deepseekV31Thinking = profile{endOfTurn: []string{"<｜end▁of▁sentence｜>"}, reasoningSwitch: "thinking", reasoningOnlyWhenOpen: true,
		onlyAssistantClosed: true}
	// Kimi K2 ends every message with <|im_end|>. Its reasoning parser reads the output as reasoning
	// unless chat_template_kwargs thinking is false (reasoning.effort "none" sets it so; Kimi K2.5's
	// template then also prefills an empty think block).
	kimiProfile = profile{endOfTurn: []string{"<|im_end|>"}, reasoningSwitch: "thinking", reasoningUnlessOff: true}
	// GLM-4.5/4.7 templates write no end token after an assistant message: the next message's role
	// token (<|user|>, <|observation|>) follows, and the model stops at them (generation_config's
	// eos_token_id). Exact mode splits at that role token (RoleOpened).
	glmProfile = profile{endOfTurn: []string{"<|user|>"}, reasoningSwitch: "enable_thinking",
		roles: []string{"<|system|>", "<|user|>", "<|assistant|>", "<|observation|>"}}
)
