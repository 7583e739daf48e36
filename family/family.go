// Package family is the model-family seam: everything stitch knows about one family of models'
// output format and turn structure, behind one interface, selected by vLLM's own parser names.
//
// A [Family] owns, for one served model (bound to its vocabulary):
//   - the output parser (stream.OutputParser) that turns generated ids into Responses pieces, and
//     the marker ids it needs (reasoning open/close, tool-call open/close);
//   - the end-of-turn and stop ids (vLLM's stop_token_ids);
//   - the text that forces a tool call (tool_choice "required" or a named function);
//   - how exact mode closes a generated turn and where a rendered turn ends;
//   - whether a generation prompt opened a reasoning block, and the chat_template_kwargs switch
//     that turns reasoning on and off.
//
// Nothing outside this package (and the parsers in package stream) knows a family's token ids; the
// registry (family.go) is the one table that maps vLLM's parser names to a family, and Default is
// the one place the default family (hermes + qwen3) is named.
//
// # Adding a family
//
// One new file plus its tests:
//
//  1. family/<name>.go: a type implementing [Family] and a constructor
//     func new<Name>(v Vocabulary) (Family, error) that resolves the family's marker ids with
//     v.TokenID (an error when the vocabulary lacks one the family cannot work without);
//  2. one row in registry (family.go) naming the vLLM parser names that select it, spelled as
//     vLLM spells them (--tool-call-parser, --reasoning-parser; see vllm/tool_parsers and
//     vllm/reasoning in vLLM's repository). A family read by one of package stream's parsers
//     needs no type of its own: its row names the stream parser specs and a profile
//     (parsers.go) instead of a constructor;
//  3. family/<name>_test.go: the constructor on a vocabulary of the family, the forced-tool-call
//     text, CloseTurn, OpensReasoning and ReasoningSwitch, and a parse of a generated turn
//     through NewParser.
//
// The parser itself lives in package stream (stream.OutputParser's contract), the chat template in
// the model directory: a family only binds them to a model.
package family

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/stitchllm/stitch/stream"
)

// Family is one model family bound to a served model's vocabulary. Implementations are immutable
// and safe for concurrent use; NewParser returns a fresh parser per turn.
type Family interface {
	// NewParser returns the output parser of one turn, decoding text with dec (a fresh decoder of
	// the model's tokenizer).
	NewParser(dec stream.TokenDecoder, t Turn) stream.OutputParser
	// StopTokenIDs end an assistant turn: sent to vLLM as stop_token_ids, and never text to the
	// parser. The caller must not modify the slice.
	StopTokenIDs() []uint32
	// ForcedToolCall returns the text that, appended to the generation prompt, makes the model's
	// output a tool call in the format it was trained on: any function when name is ""
	// (tool_choice "required"), else the named one. The parser sees its ids as the start of the
	// output. "" means the family cannot force a call.
	ForcedToolCall(name string) string
	// EndOfTurn is the id the chat template closes every rendered message with (Qwen3's
	// <|im_end|>): exact mode finds where the new turn starts in a full render by counting it.
	EndOfTurn() uint32
	// CloseTurn returns generated ids as the template would close them in history: with EndOfTurn
	// appended when the generation did not end with it (a max_tokens cut, another stop id). It may
	// append to ids in place.
	CloseTurn(ids []uint32) []uint32
	// OpensReasoning reports whether a rendered prompt ends inside a reasoning block its generation
	// prompt opened, so the output starts as reasoning.
	OpensReasoning(prompt string) bool
	// ReasoningSwitch is the chat_template_kwargs key that turns the template's reasoning on and
	// off (Qwen3's enable_thinking), set from reasoning.effort; "" when the family has none.
	ReasoningSwitch() string
}

// CallIDMinter is the optional method of a Family whose chat templates accept only call ids of
// their own form (Mistral's: 9 alphanumeric characters, or the template raises): a call the
// model wrote no id for gets one of that form, so a client replaying it is not refused.
type CallIDMinter interface {
	// NewCallID derives a call id of the family's form from newID("call"), a fresh unique id.
	NewCallID(newID func(prefix string) string) string
}

// RoleOpened is the optional method of a Family whose chat template writes no token after an
// assistant message: the next message's role token follows it, and the model stops at one
// (GLM-4.5…4.7 stop at <|user|> after an answer, at <|observation|> after a tool call). Exact mode
// then splits a full render at the role token that follows the previous answer instead of after
// its EndOfTurn, and keeps the role token the model generated rather than appending one (the
// history is what the model generated plus what a re-render appends after the answer).
type RoleOpened interface {
	// RoleTokens are the ids of the template's role tokens (every message starts with one, the
	// generation prompt too); nil when the template closes messages with EndOfTurn.
	RoleTokens() []uint32
}

// InputsUnclosed is the optional method of a Family whose chat template writes EndOfTurn only
// after assistant messages (Mistral's </s>, DeepSeek's <｜end▁of▁sentence｜>): a new turn's input
// (user message, tool output) closes none, so exact mode cannot require one after its split.
type InputsUnclosed interface {
	// OnlyAssistantClosed reports that only assistant messages end with EndOfTurn.
	OnlyAssistantClosed() bool
}

// Turn is what a turn's request decides about parsing its output.
type Turn struct {
	// ReasoningOpen reports that the prompt ends inside an opened reasoning block
	// (Family.OpensReasoning of the prompt).
	ReasoningOpen bool
	// ParallelToolCalls keeps every tool call; false keeps only the first.
	ParallelToolCalls bool
	// Tools are the request's function tools: the families whose parser converts argument values
	// by the parameter's schema type (qwen3_coder, glm45, glm47) read them, as vLLM's do.
	Tools []stream.ToolSchema
	// ReasoningOff reports that the turn's chat_template_kwargs turn the family's ReasoningSwitch
	// off (a falsy value, as Python's bool() reads it). Families whose reasoning parser reads the
	// switch itself (vLLM's kimi_k2: `thinking`, default on) then parse no reasoning.
	ReasoningOff bool
}

// Vocabulary is what a family reads from the served model's tokenizer files.
type Vocabulary struct {
	// TokenID returns the id of a token by its text (an added or special token), when the
	// vocabulary has it.
	TokenID func(text string) (uint32, bool)
	// StopTokenIDs are the model's end-of-turn ids as its files declare them (eos_token,
	// generation_config.json's eos_token_id; render.Renderer.StopTokenIDs).
	StopTokenIDs []uint32
}

// Names are the vLLM parser names that select a family.
type Names struct {
	// ToolCallParser is vLLM's --tool-call-parser ("hermes", "qwen3_coder", "llama3_json", …).
	ToolCallParser string
	// ReasoningParser is vLLM's --reasoning-parser ("qwen3", "deepseek_r1", …); "" for none.
	ReasoningParser string
}

func (n Names) String() string {
	if n.ReasoningParser == "" {
		return "tool_call_parser " + n.ToolCallParser + " (no reasoning parser)"
	}
	return "tool_call_parser " + n.ToolCallParser + " with reasoning_parser " + n.ReasoningParser
}

// The default family: a profile that names no parser is served as Qwen3 (hermes tool calls, qwen3
// reasoning). Every command and package that needs the default reads it from here (Default,
// Names.WithDefaults); configs leaves the names empty.
const (
	defaultToolCallParser  = "hermes"
	defaultReasoningParser = "qwen3"
)

// Default returns the parser names of the default family, Qwen3: hermes + qwen3.
func Default() Names {
	return Names{ToolCallParser: defaultToolCallParser, ReasoningParser: defaultReasoningParser}
}

// HarmonyNames returns the parser names of the gpt-oss family ([Harmony]): openai +
// openai_gptoss, as vLLM serves gpt-oss.
func HarmonyNames() Names { return Names{ToolCallParser: "openai", ReasoningParser: "openai_gptoss"} }

// WithDefaults returns n as stitch serves it: without a tool-call parser, the default family's
// (hermes), and without either parser, the default family. A named tool parser without a
// reasoning parser is that family without reasoning (llama3_json, Qwen2.5's hermes, …), as in
// vLLM.
func (n Names) WithDefaults() Names {
	if n.ToolCallParser == "" {
		n.ToolCallParser = defaultToolCallParser
		if n.ReasoningParser == "" {
			n.ReasoningParser = defaultReasoningParser
		}
	}
	return n
}

// entry is one row of the registry: the vLLM parser names, and what reads and closes the
// family's turns.
type entry struct {
	names Names
	// tool and reasoning are the stream parsers a spec family's output is read with (reasoning
	// nil: none); prof is how its chat templates close a turn.
	tool      func() *stream.ToolParserSpec
	reasoning func() *stream.ReasoningParserSpec
	prof      profile
	// new builds a family with its own parser (Harmony); nil: a spec family from the fields above.
	new func(Vocabulary) (Family, error)
}

// registry lists the families and the vLLM parser names that select them: the one table that
// maps those names to a family (serve, bench, render --responses and the simulator all consult
// it). A new family adds one row (see the package documentation). It is a function, not a
// variable: nothing can change it. Pairings are vLLM's documented ones
// (https://github.com/vllm-project/vllm/blob/main/docs/features/tool_calling.md,
// https://github.com/vllm-project/vllm/blob/main/docs/features/reasoning_outputs.md).
func registry() []entry {
	return []entry{
		{names: Default(), tool: stream.HermesToolParser, reasoning: stream.Qwen3ReasoningParser, prof: qwen3Profile},
		{names: HarmonyNames(), new: newHarmony},
		{names: Names{ToolCallParser: "hermes"}, tool: stream.HermesToolParser, prof: qwenProfile}, // Qwen2.5
		{names: Names{ToolCallParser: "qwen3_coder"}, tool: stream.Qwen3CoderToolParser, prof: qwenProfile},
		{names: Names{ToolCallParser: "qwen3_coder", ReasoningParser: "qwen3"}, tool: stream.Qwen3CoderToolParser, reasoning: stream.Qwen3ReasoningParser, prof: qwenThinking},
		{names: Names{ToolCallParser: "llama3_json"}, tool: stream.Llama3JSONToolParser, prof: llamaProfile},
		{names: Names{ToolCallParser: "pythonic"}, tool: stream.PythonicToolParser, prof: llamaProfile},
		{names: Names{ToolCallParser: "mistral"}, tool: stream.MistralToolParser, prof: mistralProfile},
		{names: Names{ToolCallParser: "mistral", ReasoningParser: "mistral"}, tool: stream.MistralToolParser, reasoning: stream.MistralReasoningParser, prof: mistralProfile},
		{names: Names{ToolCallParser: "deepseek_v3"}, tool: stream.DeepSeekV3ToolParser, prof: deepseekProfile},
		{names: Names{ToolCallParser: "deepseek_v3", ReasoningParser: "deepseek_r1"}, tool: stream.DeepSeekV3ToolParser, reasoning: stream.DeepSeekR1ReasoningParser, prof: deepseekProfile},
		{names: Names{ToolCallParser: "deepseek_v31"}, tool: stream.DeepSeekV31ToolParser, prof: deepseekProfile},
		{names: Names{ToolCallParser: "deepseek_v31", ReasoningParser: "deepseek_v3"}, tool: stream.DeepSeekV31ToolParser, reasoning: stream.DeepSeekV3ReasoningParser, prof: deepseekV31Thinking},
		{names: Names{ToolCallParser: "kimi_k2"}, tool: stream.KimiK2ToolParser, prof: kimiProfile},
		{names: Names{ToolCallParser: "kimi_k2", ReasoningParser: "kimi_k2"}, tool: stream.KimiK2ToolParser, reasoning: stream.KimiK2ReasoningParser, prof: kimiProfile},
		{names: Names{ToolCallParser: "glm45"}, tool: stream.GLM45ToolParser, prof: glmProfile},
		{names: Names{ToolCallParser: "glm45", ReasoningParser: "glm45"}, tool: stream.GLM45ToolParser, reasoning: stream.GLM45ReasoningParser, prof: glmProfile},
		{names: Names{ToolCallParser: "glm47"}, tool: stream.GLM47ToolParser, prof: glmProfile},
		{names: Names{ToolCallParser: "glm47", ReasoningParser: "glm45"}, tool: stream.GLM47ToolParser, reasoning: stream.GLM45ReasoningParser, prof: glmProfile},
	}
}

// Supported lists the parser-name pairs a family is registered for, in registry order.
func Supported() []Names {
	var out []Names
	for _, r := range registry() {
		out = append(out, r.names)
	}
	return out
}

// Check reports whether a family is registered for names (with defaults, [Names.WithDefaults]),
// with an error wrapping [ErrUnknown] that lists the supported names when none is.
// Configuration validation calls it before any model is loaded.
func Check(names Names) error {
	_, err := lookup(names)
	return err
}

// New returns the family registered for names (with defaults, [Names.WithDefaults]), bound to a
// model's vocabulary.
func New(names Names, v Vocabulary) (Family, error) {
	r, err := lookup(names)
	if err != nil {
		return nil, err
	}
	var f Family
	if r.new != nil {
		f, err = r.new(v)
	} else {
		f, err = newSpecFamily(r.tool(), r.reasoning, r.prof, v)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", r.names, err)
	}
	return f, nil
}

func lookup(names Names) (entry, error) {
	names = names.WithDefaults()
	rows := registry()
	for _, r := range rows {
		if r.names == names {
			return r, nil
		}
	}
	list := make([]string, 0, len(rows))
	for _, r := range rows {
		list = append(list, r.names.ToolCallParser+"+"+cmp.Or(r.names.ReasoningParser, "none"))
	}
	slices.Sort(list)
	return entry{}, fmt.Errorf("%w: %s (supported tool_call_parser+reasoning_parser: %s)", ErrUnknown, names, strings.Join(list, ", "))
}
