package sim

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	modelfamily "github.com/stitchllm/stitch/family"
)

// Tool-call parser names (vLLM's --tool-call-parser) whose output format the scripted model
// writes: the keys of callWriters. The formats follow the families' chat templates and vLLM's
// parsers (vllm/tool_parsers/*); see docs/operator-guide.md. Which pairs exist, and the default,
// is package family's registry (TestWritersCoverRegistry).
const (
	parserHermes      = "hermes"
	parserQwen3Coder  = "qwen3_coder"
	parserLlama3JSON  = "llama3_json"
	parserPythonic    = "pythonic"
	parserMistral     = "mistral"
	parserDeepSeekV3  = "deepseek_v3"
	parserDeepSeekV31 = "deepseek_v31"
	parserKimiK2      = "kimi_k2"
	parserGLM45       = "glm45"
	parserGLM47       = "glm47"
)

// Reasoning parser names (vLLM's --reasoning-parser): the keys of reasoningWriters.
const (
	reasoningQwen3      = "qwen3"
	reasoningDeepSeekR1 = "deepseek_r1"
	reasoningDeepSeekV3 = "deepseek_v3"
	reasoningGLM45      = "glm45"
	reasoningKimiK2     = "kimi_k2"
	reasoningMistral    = "mistral"
)

// toolCall is one call the scripted model makes: the function name and its arguments as a JSON
// object (Python json.dumps spacing, as writeArguments writes it).
type toolCall struct {
	name, args string
	id         string // a call id the family writes itself (Mistral), else ""
}

// callWriter writes one family's tool calls (all calls of a turn, so parallel calls get the
// family's own separators).
type callWriter struct {
	// markers are the token strings the format writes as single tokens; a tokenizer that lacks
	// one cannot speak the format.
	markers []string
	// opener is how a forced call's prefill starts (the caller wrote it; the model continues).
	opener string
	write  func(b *strings.Builder, calls []toolCall)
	// ids reports whether the family writes its own call ids (drawn by the scripted model).
	ids bool
}

// reasoningWriter writes a reasoning block: open, the thoughts, close.
type reasoningWriter struct {
	open, close string
	// afterOpen and beforeClose wrap the thoughts; after follows the closing marker.
	afterOpen, beforeClose, after string
}

var reasoningWriters = map[string]reasoningWriter{
	// Qwen3: "<think>\n…\n</think>\n\n" (the chat template's own history rendering).
	reasoningQwen3: {open: "<think>", close: "</think>", afterOpen: "\n", beforeClose: "\n", after: "\n\n"},
	// DeepSeek R1 / V3.1 thinking (vLLM's deepseek_v3 reasoning parser reads V3.1's thinking turns
	// as deepseek_r1): the generation prompt opens "<think>"; the model closes it.
	reasoningDeepSeekR1: {open: "<think>", close: "</think>", afterOpen: "\n", beforeClose: "\n", after: "\n\n"},
	reasoningDeepSeekV3: {open: "<think>", close: "</think>", afterOpen: "\n", beforeClose: "\n", after: "\n\n"},
	// GLM-4.5…4.7 and Kimi K2 write the block without padding.
	reasoningGLM45:  {open: "<think>", close: "</think>", after: "\n"},
	reasoningKimiK2: {open: "<think>", close: "</think>"},
	// Magistral: [THINK]…[/THINK].
	reasoningMistral: {open: "[THINK]", close: "[/THINK]"},
}

// markers returns the reasoning block's token strings.
func (w reasoningWriter) markers() []string { return []string{w.open, w.close} }

// callWriters are the formats by parser name; mistral is resolved per tokenizer (Nemo's JSON list
// or Small 3.2's [CALL_ID]/[ARGS] form), see newFamily.
var callWriters = map[string]callWriter{
	parserHermes: {markers: []string{"<tool_call>", "</tool_call>"}, opener: "<tool_call>\n", write: func(b *strings.Builder, calls []toolCall) {
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<tool_call>\n{\"name\": ")
			writePyJSONString(b, c.name)
			b.WriteString(", \"arguments\": ")
			b.WriteString(c.args)
			b.WriteString("}\n</tool_call>")
		}
	}},
	// Qwen3-Coder / Qwen3.5: XML parameters, values raw (strings unquoted, others as JSON).
	parserQwen3Coder: {markers: []string{"<tool_call>", "</tool_call>"}, opener: "<tool_call>\n", write: func(b *strings.Builder, calls []toolCall) {
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<tool_call>\n<function=" + c.name + ">\n")
			forArgs(c.args, func(k string, v gjson.Result) {
				b.WriteString("<parameter=" + k + ">\n" + rawValue(v) + "\n</parameter>\n")
			})
			b.WriteString("</function>\n</tool_call>")
		}
	}},
	// Llama 3.1/3.3: bare JSON with "parameters"; parallel calls separated by "; " (vLLM's
	// llama3_json parser splits on it).
	parserLlama3JSON: {opener: "{\"name\": \"", write: func(b *strings.Builder, calls []toolCall) {
		for i, c := range calls {
			if i > 0 {
				b.WriteString("; ")
			}
			b.WriteString("{\"name\": ")
			writePyJSONString(b, c.name)
			b.WriteString(", \"parameters\": ")
			b.WriteString(c.args)
			b.WriteString("}")
		}
	}},
	// Llama 3.2/4 pythonic, Gemma: [f(a=1), g(b="x")].
	parserPythonic: {opener: "[", write: func(b *strings.Builder, calls []toolCall) {
		b.WriteString("[")
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(c.name + "(")
			n := 0
			forArgs(c.args, func(k string, v gjson.Result) {
				if n > 0 {
					b.WriteString(", ")
				}
				n++
				b.WriteString(k + "=")
				writePython(b, v)
			})
			b.WriteString(")")
		}
		b.WriteString("]")
	}},
	// Mistral Nemo (tokenizer v3): [TOOL_CALLS] then a JSON list with 9-character ids.
	parserMistral: {markers: []string{"[TOOL_CALLS]"}, opener: "[TOOL_CALLS]", ids: true, write: func(b *strings.Builder, calls []toolCall) {
		b.WriteString("[TOOL_CALLS][")
		for i, c := range calls {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("{\"name\": ")
			writePyJSONString(b, c.name)
			b.WriteString(", \"arguments\": ")
			b.WriteString(c.args)
			b.WriteString(", \"id\": ")
			writePyJSONString(b, c.id)
			b.WriteString("}")
		}
		b.WriteString("]")
	}},
	// DeepSeek V3: the call type, the name, then the arguments in a json code block (vLLM's
	// deepseek_v3 parser: <｜tool▁call▁begin｜>type<｜tool▁sep｜>name\n```json\n{…}\n```<｜tool▁call▁end｜>).
	parserDeepSeekV3: {markers: deepseekMarkers, opener: "<｜tool▁calls▁begin｜>", write: func(b *strings.Builder, calls []toolCall) {
		b.WriteString("<｜tool▁calls▁begin｜>")
		for i, c := range calls {
			if i > 0 {
				b.WriteString("\n")
			}
			b.WriteString("<｜tool▁call▁begin｜>function<｜tool▁sep｜>" + c.name + "\n```json\n" + c.args + "\n```<｜tool▁call▁end｜>")
		}
		b.WriteString("<｜tool▁calls▁end｜>")
	}},
	// DeepSeek V3.1: name<｜tool▁sep｜>arguments, no code block.
	parserDeepSeekV31: {markers: deepseekMarkers, opener: "<｜tool▁calls▁begin｜>", write: func(b *strings.Builder, calls []toolCall) {
		b.WriteString("<｜tool▁calls▁begin｜>")
		for _, c := range calls {
			b.WriteString("<｜tool▁call▁begin｜>" + c.name + "<｜tool▁sep｜>" + c.args + "<｜tool▁call▁end｜>")
		}
		b.WriteString("<｜tool▁calls▁end｜>")
	}},
	parserKimiK2: {markers: []string{"<|tool_calls_section_begin|>", "<|tool_call_begin|>", "<|tool_call_argument_begin|>", "<|tool_call_end|>", "<|tool_calls_section_end|>"},
		opener: "<|tool_calls_section_begin|>", write: func(b *strings.Builder, calls []toolCall) {
			b.WriteString("<|tool_calls_section_begin|>")
			for i, c := range calls {
				b.WriteString("<|tool_call_begin|>functions." + c.name + ":" + strconv.Itoa(i) + "<|tool_call_argument_begin|>" + c.args + "<|tool_call_end|>")
			}
			b.WriteString("<|tool_calls_section_end|>")
		}},
	parserGLM45: {markers: glmMarkers, opener: "<tool_call>", write: func(b *strings.Builder, calls []toolCall) {
		writeGLM(b, calls, "\n")
	}},
	// GLM-4.7 writes the same elements without newlines.
	parserGLM47: {markers: glmMarkers, opener: "<tool_call>", write: func(b *strings.Builder, calls []toolCall) {
		writeGLM(b, calls, "")
	}},
}

var (
	deepseekMarkers = []string{"<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>", "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"}
	glmMarkers      = []string{"<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"}
)

// mistralCallID is Mistral Small 3.x's form (tokenizer v11+):
// [TOOL_CALLS]name[CALL_ID]id[ARGS]{…} for each call.
var mistralCallID = callWriter{markers: []string{"[TOOL_CALLS]", "[CALL_ID]", "[ARGS]"}, opener: "[TOOL_CALLS]", ids: true,
	write: func(b *strings.Builder, calls []toolCall) {
		for _, c := range calls {
			b.WriteString("[TOOL_CALLS]" + c.name + "[CALL_ID]" + c.id + "[ARGS]" + c.args)
		}
	}}

func writeGLM(b *strings.Builder, calls []toolCall, nl string) {
	for i, c := range calls {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString("<tool_call>" + c.name + nl)
		forArgs(c.args, func(k string, v gjson.Result) {
			b.WriteString("<arg_key>" + k + "</arg_key>" + nl + "<arg_value>" + rawValue(v) + "</arg_value>" + nl)
		})
		b.WriteString("</tool_call>")
	}
}

// forArgs calls f for each key of the JSON object args, in order.
func forArgs(args string, f func(k string, v gjson.Result)) {
	gjson.Parse(args).ForEach(func(k, v gjson.Result) bool {
		f(k.String(), v)
		return true
	})
}

// rawValue is an argument as the XML-style formats write it: strings as they are, anything else
// as its JSON text.
func rawValue(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.String()
	}
	return v.Raw
}

// writePython writes a JSON value as a Python literal (True/False/None, dicts and lists).
func writePython(b *strings.Builder, v gjson.Result) {
	switch {
	case v.Type == gjson.String:
		writePyJSONString(b, v.String())
	case v.Type == gjson.True:
		b.WriteString("True")
	case v.Type == gjson.False:
		b.WriteString("False")
	case v.Type == gjson.Null:
		b.WriteString("None")
	case v.IsArray():
		b.WriteString("[")
		for i, x := range v.Array() {
			if i > 0 {
				b.WriteString(", ")
			}
			writePython(b, x)
		}
		b.WriteString("]")
	case v.IsObject():
		b.WriteString("{")
		n := 0
		v.ForEach(func(k, x gjson.Result) bool {
			if n > 0 {
				b.WriteString(", ")
			}
			n++
			writePyJSONString(b, k.String())
			b.WriteString(": ")
			writePython(b, x)
			return true
		})
		b.WriteString("}")
	default:
		b.WriteString(v.Raw)
	}
}

// family is the output format of the scripted model: its tool calls, and its reasoning block
// (nil: no reasoning unless the prompt opened a block the model must close).
type family struct {
	parser    string
	calls     callWriter
	reasoning *reasoningWriter
	// legacy is the default family (no parser configured): hermes calls and a Qwen3 think block
	// on every chat answer, the simulator's behaviour before families existed.
	legacy bool
}

// tokenLookup is the part of a Tokenizer newFamily needs.
type tokenLookup interface {
	TokenID(token string) (uint32, bool)
}

// newFamily resolves the parser names against package family's registry (an unregistered pair is
// refused with the list of supported ones) and the tokenizer: every marker the formats write must
// be one of its tokens, else the model cannot write that format and the simulator refuses it.
func newFamily(tok tokenLookup, toolParser, reasoningParser string) (*family, error) {
	names := modelfamily.Names{ToolCallParser: toolParser, ReasoningParser: reasoningParser}
	legacy := names == (modelfamily.Names{})
	names = names.WithDefaults()
	if err := modelfamily.Check(names); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnsupportedModel, err)
	}
	f := &family{parser: names.ToolCallParser, legacy: legacy}
	cw, ok := callWriters[names.ToolCallParser]
	if !ok {
		// Unreachable while TestWritersCoverRegistry passes.
		return nil, fmt.Errorf("%w: the simulator writes no %s tool calls", ErrUnsupportedModel, names.ToolCallParser)
	}
	if names.ToolCallParser == parserMistral {
		if _, ok := tok.TokenID("[CALL_ID]"); ok {
			if _, ok := tok.TokenID("[ARGS]"); ok {
				cw = mistralCallID
			}
		}
	}
	if err := requireTokens(tok, "tool call parser "+names.ToolCallParser, cw.markers); err != nil {
		return nil, err
	}
	f.calls = cw
	if names.ReasoningParser != "" {
		rw, ok := reasoningWriters[names.ReasoningParser]
		if !ok {
			return nil, fmt.Errorf("%w: the simulator writes no %s reasoning", ErrUnsupportedModel, names.ReasoningParser)
		}
		if err := requireTokens(tok, "reasoning parser "+names.ReasoningParser, rw.markers()); err != nil {
			return nil, err
		}
		f.reasoning = &rw
	}
	return f, nil
}

func requireTokens(tok tokenLookup, what string, markers []string) error {
	var missing []string
	for _, m := range markers {
		if _, ok := tok.TokenID(m); !ok {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: %s writes %s, which the tokenizer lacks", ErrUnsupportedModel, what, strings.Join(missing, " "))
	}
	return nil
}

// callIDChars are the characters of a Mistral call id (vLLM's mistral parser draws its ids from
// the same alphabet: letters and digits, 9 long).
const callIDChars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"

func drawCallID(r rng) string {
	var b [9]byte
	for i := range b {
		b[i] = callIDChars[r.IntN(len(callIDChars))]
	}
	return string(b[:])
}
