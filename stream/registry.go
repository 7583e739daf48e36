package stream

import (
	"encoding/json"
	"errors"
	"fmt"
)

// ErrMissingMarker is returned (wrapped) by [ResolveMarkers] when the
// tokenizer has no single token for a marker the parser needs: the model is
// not of that family, or its tokenizer lacks the marker.
var ErrMissingMarker = errors.New("marker token missing from tokenizer")

// ToolSchema is one function tool of the request, for the parsers that
// convert argument values by their JSON schema type (qwen3_coder, glm45,
// glm47), as vLLM's do.
type ToolSchema struct {
	Name string
	// Parameters is the tool's parameters JSON schema (nil: none).
	Parameters json.RawMessage
}

// ForcedToolChoice is how stitch makes a family's model call a tool
// (tool_choice "required" or a named function) in the family's own format:
// the prompt ends with a prefix of a tool call, which the output continues
// ([FamilyOptions.Prefill] parses it as part of the output).
//
// vLLM itself does not do this: for tool_choice "required" and named it
// uses structured outputs (guided JSON over the whole output: for named, the
// function's parameters schema, the output being the bare arguments object;
// for required, an array of {"name", "parameters"} objects) and reads the
// output as that JSON, bypassing the tool parser; see vLLM's
// entrypoints/openai serving_chat / protocol (_get_json_schema_from_tool).
// NamedArgumentsJSON says where stitch can still use that: after Named(name)
// the model writes exactly the arguments JSON object, so a structured-output
// json schema of the tool's parameters constrains it.
type ForcedToolChoice struct {
	// Required is the text that starts a call of a tool the model picks.
	Required string
	// Named returns the text that starts a call of the named tool.
	Named func(name string) string
	// NamedArgumentsJSON reports that the output after Named(name) is the
	// arguments JSON object itself.
	NamedArgumentsJSON bool
}

// ToolParserSpec is one of vLLM's tool-call parsers as stitch implements it.
type ToolParserSpec struct {
	// Name is vLLM's --tool-call-parser value.
	Name string
	// Markers are the marker tokens the parser reads (see [ResolveMarkers]).
	Markers []MarkerSpec
	// Forced is the family's forced tool-call prefix.
	Forced ForcedToolChoice
	// Notes say where stitch departs from vLLM's parser.
	Notes string
	// CallIDLen, when > 0, is the length of the alphanumeric call ids the family's chat templates
	// accept (Mistral's raise on any other: 9, the form vLLM's MistralToolCall draws); a call the
	// model wrote no id for gets one of that form (family.CallIDMinter), not call_<random>.
	CallIDLen int

	newFormat func(opts *FamilyOptions) toolFormat
	closer    markerKind
	trigger   byte
}

// MarkerSpec is a marker token a parser reads.
type MarkerSpec struct {
	// Token is the token's string in the tokenizer ("<tool_call>").
	Token string
	// Optional markers may be missing (a tokenizer version without them).
	Optional bool
	kind     markerKind
}

// ReasoningParserSpec is one of vLLM's reasoning parsers as stitch
// implements it.
type ReasoningParserSpec struct {
	// Name is vLLM's --reasoning-parser value.
	Name string
	// Markers are its start and end tokens.
	Markers []MarkerSpec
	// StartsOpen reports that the output is reasoning from its first token
	// until the end marker even without a start marker (the template opens
	// the block in the prompt), as vLLM's deepseek_r1 parser assumes.
	StartsOpen bool
	// Notes say where stitch departs from vLLM's parser.
	Notes string

	dropText string // message text the parser removes
}

type reasoningRule struct {
	startsOpen bool
}

func m(token string, k markerKind) MarkerSpec { return MarkerSpec{Token: token, kind: k} }
func mOpt(token string, k markerKind) MarkerSpec {
	return MarkerSpec{Token: token, kind: k, Optional: true}
}

// HermesToolParser returns vLLM's --tool-call-parser hermes: Qwen2.5, Qwen3, QwQ and Hermes models;
// `<tool_call>\n{"name": …, "arguments": …}\n</tool_call>`.
func HermesToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "hermes",
		Markers: []MarkerSpec{m("<tool_call>", mkToolsBegin), m("</tool_call>", mkToolsEnd)},
		Forced: ForcedToolChoice{
			Required:           "<tool_call>\n{\"name\": \"",
			Named:              func(n string) string { return "<tool_call>\n{\"name\": " + pyQuote(n) + ", \"arguments\": " },
			NamedArgumentsJSON: true,
		},
		newFormat: func(*FamilyOptions) toolFormat { return &jsonObjectFormat{style: styleHermes} },
		closer:    mkToolsEnd,
	}
}

// Qwen3CoderToolParser returns vLLM's --tool-call-parser qwen3_coder: Qwen3-Coder and Qwen3.5; XML
// `<function=NAME><parameter=K>…` inside <tool_call>.
func Qwen3CoderToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "qwen3_coder",
		Markers: []MarkerSpec{m("<tool_call>", mkToolsBegin), m("</tool_call>", mkToolsEnd)},
		Forced: ForcedToolChoice{
			Required: "<tool_call>\n<function=",
			Named:    func(n string) string { return "<tool_call>\n<function=" + n + ">\n" },
		},
		Notes: "a </parameter> ends a value only before another of the tool's parameters, </function> or </tool_call> (vLLM's lookahead; its nesting count of literal <parameter= inside values is not kept); a repeated parameter is written twice (vLLM keeps the last value at the first's place); string values stream as written, other values are converted when they end",
		newFormat: func(o *FamilyOptions) toolFormat {
			return &xmlFormat{style: styleQwenCoder, schemas: parseSchemas(o.Tools)}
		},
		closer: mkToolsEnd,
	}
}

// Llama3JSONToolParser returns vLLM's --tool-call-parser llama3_json: Llama 3.1–3.3; a bare
// `{"name": …, "parameters": …}` object.
func Llama3JSONToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "llama3_json",
		Markers: []MarkerSpec{mOpt("<|python_tag|>", mkToolsBegin)},
		Forced: ForcedToolChoice{
			Required:           "{\"name\": \"",
			Named:              func(n string) string { return "{\"name\": " + pyQuote(n) + ", \"parameters\": " },
			NamedArgumentsJSON: true,
		},
		Notes:     "calls are read only where the message starts with { or <|python_tag|> (vLLM's streaming rule; its non-streaming parser finds JSON anywhere); arguments are the JSON the model wrote (vLLM re-serializes them with json.dumps)",
		newFormat: func(*FamilyOptions) toolFormat { return &jsonObjectFormat{style: styleLlama} },
		trigger:   '{',
	}
}

// PythonicToolParser returns vLLM's --tool-call-parser pythonic: Llama 3.2/4 and Gemma 3; `[f(a=1),
// g(b="x")]`.
func PythonicToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "pythonic",
		Markers: nil,
		Forced: ForcedToolChoice{
			Required: "[",
			Named:    func(n string) string { return "[" + n + "(" },
		},
		Notes:     "calls are read where the message starts with [; negative numbers are accepted (vLLM's ast check rejects -1 as a non-literal); values are converted per keyword, when each ends",
		newFormat: func(*FamilyOptions) toolFormat { return &pythonicFormat{} },
		trigger:   '[',
	}
}

// MistralToolParser returns vLLM's --tool-call-parser mistral: Mistral and Magistral;
// `[TOOL_CALLS]`.
func MistralToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name: "mistral",
		Markers: []MarkerSpec{m("[TOOL_CALLS]", mkToolsBegin), mOpt("[ARGS]", mkSep),
			mOpt("[CALL_ID]", mkCallID)},
		Forced: ForcedToolChoice{
			Required: "[TOOL_CALLS]",
			Named:    func(n string) string { return "[TOOL_CALLS]" + n },
		},
		Notes: "both forms are read: [TOOL_CALLS][{...}] (pre-v11 tokenizers) and [TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...} / NAME{...} (v11+); the model's call ids become call_ids (vLLM draws random ones), from output_item.added on (the JSON form's call is announced once its id is read); a call without one gets 9 alphanumeric characters, the only form Mistral's templates accept. " +
			"Forced is the v11+ form; a pre-v11 model (Nemo) is forced with [TOOL_CALLS][{\"name\": \"NAME\", \"arguments\": (then the arguments are bare JSON)",
		CallIDLen: 9,
		newFormat: func(*FamilyOptions) toolFormat { return &mistralFormat{} },
	}
}

// DeepSeekV3ToolParser returns vLLM's --tool-call-parser deepseek_v3: DeepSeek V3 and R1;
// `<｜tool▁calls▁begin｜>` sections with a json code block.
func DeepSeekV3ToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "deepseek_v3",
		Markers: deepseekMarkers(),
		Forced: ForcedToolChoice{Required: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>", Named: func(n string) string {
			return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>" + n + "\n```json\n"
		}, NamedArgumentsJSON: true},
		newFormat: func(*FamilyOptions) toolFormat { return &sectionFormat{style: styleDeepSeekV3} },
		closer:    mkToolsEnd,
	}
}

// DeepSeekV31ToolParser returns vLLM's --tool-call-parser deepseek_v31: DeepSeek V3.1;
// `<｜tool▁calls▁begin｜>` sections, NAME<｜tool▁sep｜>ARGS.
func DeepSeekV31ToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "deepseek_v31",
		Markers: deepseekMarkers(),
		Forced: ForcedToolChoice{Required: "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>", Named: func(n string) string {
			return "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>" + n + "<｜tool▁sep｜>"
		}, NamedArgumentsJSON: true},
		newFormat: func(*FamilyOptions) toolFormat { return &sectionFormat{style: styleDeepSeekV31} },
		closer:    mkToolsEnd,
	}
}

// KimiK2ToolParser returns vLLM's --tool-call-parser kimi_k2: Kimi K2;
// `<|tool_calls_section_begin|>` sections.
func KimiK2ToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name: "kimi_k2",
		Markers: []MarkerSpec{m("<|tool_calls_section_begin|>", mkToolsBegin), m("<|tool_calls_section_end|>", mkToolsEnd),
			mOpt("<|tool_call_section_begin|>", mkToolsBegin), mOpt("<|tool_call_section_end|>", mkToolsEnd),
			m("<|tool_call_begin|>", mkCallBegin), m("<|tool_call_end|>", mkCallEnd), m("<|tool_call_argument_begin|>", mkSep)},
		Forced: ForcedToolChoice{
			Required: "<|tool_calls_section_begin|><|tool_call_begin|>functions.",
			Named: func(n string) string {
				return "<|tool_calls_section_begin|><|tool_call_begin|>functions." + n + ":0<|tool_call_argument_begin|>"
			},
			NamedArgumentsJSON: true,
		},
		Notes:     "the call id the model writes (functions.NAME:IDX) is the call_id, as in vLLM",
		newFormat: func(*FamilyOptions) toolFormat { return &sectionFormat{style: styleKimi} },
		closer:    mkToolsEnd,
	}
}

// GLM45ToolParser returns vLLM's --tool-call-parser glm45: GLM-4.5 and 4.6;
// `<tool_call>NAME\n<arg_key>…</arg_key>\n<arg_value>…</arg_value>`.
func GLM45ToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "glm45",
		Markers: glmMarkers(),
		Forced: ForcedToolChoice{
			Required: "<tool_call>",
			Named:    func(n string) string { return "<tool_call>" + n + "\n" },
		},
		newFormat: func(o *FamilyOptions) toolFormat {
			return &xmlFormat{style: styleGLM45, schemas: parseSchemas(o.Tools)}
		},
		closer: mkToolsEnd,
	}
}

// GLM47ToolParser returns vLLM's --tool-call-parser glm47: GLM-4.7; glm45 without the newlines.
func GLM47ToolParser() *ToolParserSpec {
	return &ToolParserSpec{
		Name:    "glm47",
		Markers: glmMarkers(),
		Forced: ForcedToolChoice{
			Required: "<tool_call>",
			Named:    func(n string) string { return "<tool_call>" + n },
		},
		newFormat: func(o *FamilyOptions) toolFormat {
			return &xmlFormat{style: styleGLM47, schemas: parseSchemas(o.Tools)}
		},
		closer: mkToolsEnd,
	}
}

func deepseekMarkers() []MarkerSpec {
	return []MarkerSpec{m("<｜tool▁calls▁begin｜>", mkToolsBegin), m("<｜tool▁calls▁end｜>", mkToolsEnd),
		m("<｜tool▁call▁begin｜>", mkCallBegin), m("<｜tool▁call▁end｜>", mkCallEnd), m("<｜tool▁sep｜>", mkSep)}
}

func glmMarkers() []MarkerSpec {
	return []MarkerSpec{m("<tool_call>", mkToolsBegin), m("</tool_call>", mkToolsEnd),
		m("<arg_key>", mkArgKey), m("</arg_key>", mkArgKeyEnd), m("<arg_value>", mkArgValue), m("</arg_value>", mkArgValueEnd)}
}

// thinkMarkers are the <think>…</think> block's markers (qwen3, deepseek_r1, deepseek_v3, glm45,
// kimi_k2).
func thinkMarkers() []MarkerSpec {
	return []MarkerSpec{m("<think>", mkThinkStart), m("</think>", mkThinkEnd)}
}

// Qwen3ReasoningParser returns vLLM's --reasoning-parser qwen3.
func Qwen3ReasoningParser() *ReasoningParserSpec {
	return &ReasoningParserSpec{Name: "qwen3", Markers: thinkMarkers(),
		Notes: "<think> opens reasoning only at the start of the output; set ThinkingOpen when the prompt opened it"}
}

// DeepSeekR1ReasoningParser returns vLLM's --reasoning-parser deepseek_r1.
func DeepSeekR1ReasoningParser() *ReasoningParserSpec {
	return &ReasoningParserSpec{Name: "deepseek_r1", Markers: thinkMarkers(), StartsOpen: true,
		Notes: "the output is reasoning up to </think> (a leading <think> is dropped), as vLLM's DeepSeekR1ReasoningParser reads it"}
}

// DeepSeekV3ReasoningParser returns vLLM's --reasoning-parser deepseek_v3.
func DeepSeekV3ReasoningParser() *ReasoningParserSpec {
	return &ReasoningParserSpec{Name: "deepseek_v3", Markers: thinkMarkers(), StartsOpen: true,
		Notes: "vLLM's deepseek_v3 delegates to deepseek_r1 when chat_template_kwargs thinking is true and reads plain content otherwise: pass it only for thinking turns"}
}

// GLM45ReasoningParser returns vLLM's --reasoning-parser glm45.
func GLM45ReasoningParser() *ReasoningParserSpec {
	return &ReasoningParserSpec{Name: "glm45", Markers: thinkMarkers(),
		Notes: "<think> opens reasoning only at the start of the output; set ThinkingOpen when the prompt opened it"}
}

// KimiK2ReasoningParser returns vLLM's --reasoning-parser kimi_k2.
func KimiK2ReasoningParser() *ReasoningParserSpec {
	return &ReasoningParserSpec{Name: "kimi_k2", Markers: thinkMarkers(), StartsOpen: true, dropText: "(no content)",
		Notes: "vLLM's kimi_k2 delegates to deepseek_r1 unless chat_template_kwargs thinking is false (then pass no reasoning parser); \"(no content)\" is removed from message text, as vLLM does"}
}

// MistralReasoningParser returns vLLM's --reasoning-parser mistral.
func MistralReasoningParser() *ReasoningParserSpec {
	return &ReasoningParserSpec{Name: "mistral", Markers: []MarkerSpec{m("[THINK]", mkThinkStart), m("[/THINK]", mkThinkEnd)},
		Notes: "[THINK] opens reasoning only at the start of the output (vLLM also takes text before it as content)"}
}

// ResolveMarkers looks up the marker tokens of a tool parser and an optional
// reasoning parser (either may be nil) in tok. A required marker without a
// token is an error wrapping [ErrMissingMarker] that names it; optional ones
// are left out.
func ResolveMarkers(tok TokenLookup, tool *ToolParserSpec, reasoning *ReasoningParserSpec) (MarkerIDs, error) {
	ids := MarkerIDs{}
	var specs []MarkerSpec
	var owner []string
	if tool != nil {
		for _, s := range tool.Markers {
			specs = append(specs, s)
			owner = append(owner, "tool call parser "+tool.Name)
		}
	}
	if reasoning != nil {
		for _, s := range reasoning.Markers {
			specs = append(specs, s)
			owner = append(owner, "reasoning parser "+reasoning.Name)
		}
	}
	var errs []error
	for i, s := range specs {
		id, ok := tok.TokenID(s.Token)
		if !ok {
			if !s.Optional {
				errs = append(errs, fmt.Errorf("%s: %q: %w", owner[i], s.Token, ErrMissingMarker))
			}
			continue
		}
		ids[s.Token] = id
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return ids, nil
}

// NewFamilyParser returns the output parser for a family: tool (nil: no tool
// calls) and reasoning (nil: none), reading text with dec. opts.Markers must
// hold the required markers' ids ([ResolveMarkers]). It panics if dec is nil.
func NewFamilyParser(dec TokenDecoder, tool *ToolParserSpec, reasoning *ReasoningParserSpec, opts FamilyOptions) (*FamilyParser, error) {
	if dec == nil {
		panic("stream: NewFamilyParser with nil TokenDecoder")
	}
	p := &FamilyParser{dec: dec, opts: opts}
	add := func(owner string, specs []MarkerSpec) error {
		for _, s := range specs {
			id, ok := opts.Markers[s.Token]
			if !ok {
				if s.Optional {
					continue
				}
				return fmt.Errorf("%s: %q: %w", owner, s.Token, ErrMissingMarker)
			}
			p.markers = append(p.markers, idKind{id: id, kind: s.kind})
		}
		return nil
	}
	if reasoning != nil {
		if err := add("reasoning parser "+reasoning.Name, reasoning.Markers); err != nil {
			return nil, err
		}
		p.reason = &reasoningRule{startsOpen: reasoning.StartsOpen}
		p.drop = reasoning.dropText
	}
	if tool != nil {
		if err := add("tool call parser "+tool.Name, tool.Markers); err != nil {
			return nil, err
		}
		p.format = tool.newFormat(&p.opts)
		p.closer = tool.closer
		p.trigger = tool.trigger
	}
	p.seg = segment{leading: true}
	if p.reason != nil && (opts.ThinkingOpen || p.reason.startsOpen) {
		p.mode = fmReasoning
	} else {
		p.thinkOK = p.reason != nil
	}
	p.triggerOK = p.trigger != 0
	if len(opts.Prefill) > 0 {
		for _, id := range opts.Prefill {
			p.pending = p.step(p.pending, id, 0)
		}
	}
	return p, nil
}
