package sim

import (
	"strings"
	"testing"

	modelfamily "github.com/stitchllm/stitch/family"
)

// TestCallWriters pins each family's tool-call text for one call and for two parallel calls.
func TestCallWriters(t *testing.T) {
	calls := []toolCall{
		{name: "get_weather", args: `{"city": "Paris", "days": 2}`, id: "abcDEF123"},
		{name: "get_time", args: `{"tz": "CET", "exact": true}`, id: "xyz789XYZ"},
	}
	tests := []struct {
		parser    string
		one, both string
	}{
		{parserHermes,
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>",
			"<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"tz\": \"CET\", \"exact\": true}}\n</tool_call>"},
		{parserQwen3Coder,
			"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>",
			"<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n2\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_time>\n<parameter=tz>\nCET\n</parameter>\n<parameter=exact>\ntrue\n</parameter>\n</function>\n</tool_call>"},
		{parserLlama3JSON,
			`{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}`,
			`{"name": "get_weather", "parameters": {"city": "Paris", "days": 2}}; {"name": "get_time", "parameters": {"tz": "CET", "exact": true}}`},
		{parserPythonic,
			`[get_weather(city="Paris", days=2)]`,
			`[get_weather(city="Paris", days=2), get_time(tz="CET", exact=True)]`},
		{parserMistral,
			`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}, "id": "abcDEF123"}]`,
			`[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 2}, "id": "abcDEF123"}, {"name": "get_time", "arguments": {"tz": "CET", "exact": true}, "id": "xyz789XYZ"}]`},
		{parserDeepSeekV3,
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", \"days\": 2}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
			"<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_weather\n```json\n{\"city\": \"Paris\", \"days\": 2}\n```<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{\"tz\": \"CET\", \"exact\": true}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>"},
		{parserDeepSeekV31,
			`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris", "days": 2}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`,
			`<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>get_weather<｜tool▁sep｜>{"city": "Paris", "days": 2}<｜tool▁call▁end｜><｜tool▁call▁begin｜>get_time<｜tool▁sep｜>{"tz": "CET", "exact": true}<｜tool▁call▁end｜><｜tool▁calls▁end｜>`},
		{parserKimiK2,
			`<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris", "days": 2}<|tool_call_end|><|tool_calls_section_end|>`,
			`<|tool_calls_section_begin|><|tool_call_begin|>functions.get_weather:0<|tool_call_argument_begin|>{"city": "Paris", "days": 2}<|tool_call_end|><|tool_call_begin|>functions.get_time:1<|tool_call_argument_begin|>{"tz": "CET", "exact": true}<|tool_call_end|><|tool_calls_section_end|>`},
		{parserGLM45,
			"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>",
			"<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>2</arg_value>\n</tool_call>\n<tool_call>get_time\n<arg_key>tz</arg_key>\n<arg_value>CET</arg_value>\n<arg_key>exact</arg_key>\n<arg_value>true</arg_value>\n</tool_call>"},
		{parserGLM47,
			"<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>",
			"<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>days</arg_key><arg_value>2</arg_value></tool_call>\n<tool_call>get_time<arg_key>tz</arg_key><arg_value>CET</arg_value><arg_key>exact</arg_key><arg_value>true</arg_value></tool_call>"},
		{"mistral small 3.2",
			`[TOOL_CALLS]get_weather[CALL_ID]abcDEF123[ARGS]{"city": "Paris", "days": 2}`,
			`[TOOL_CALLS]get_weather[CALL_ID]abcDEF123[ARGS]{"city": "Paris", "days": 2}[TOOL_CALLS]get_time[CALL_ID]xyz789XYZ[ARGS]{"tz": "CET", "exact": true}`},
	}
	for _, tt := range tests {
		w, ok := callWriters[tt.parser]
		if tt.parser == "mistral small 3.2" {
			w, ok = mistralCallID, true
		}
		if !ok {
			t.Fatalf("no writer for %s", tt.parser)
		}
		for _, c := range []struct {
			calls []toolCall
			want  string
		}{{calls[:1], tt.one}, {calls, tt.both}} {
			var b strings.Builder
			w.write(&b, c.calls)
			if b.String() != c.want {
				t.Errorf("%s, %d calls:\n got %q\nwant %q", tt.parser, len(c.calls), b.String(), c.want)
			}
			for _, m := range w.markers {
				if !strings.Contains(b.String(), m) {
					t.Errorf("%s: marker %s not written", tt.parser, m)
				}
			}
			if w.opener != "" && !strings.HasPrefix(b.String(), w.opener) {
				t.Errorf("%s: output does not start with its opener %q", tt.parser, w.opener)
			}
		}
	}
}

// mapTokens is a tokenLookup over a fixed set of token strings.
type mapTokens map[string]bool

func (m mapTokens) TokenID(s string) (uint32, bool) { return 0, m[s] }

func TestNewFamilyRefusesMissingMarkers(t *testing.T) {
	qwenLike := mapTokens{"<tool_call>": true, "</tool_call>": true, "<think>": true, "</think>": true}
	tests := []struct {
		tool, reasoning string
		wantErr         string // "" for success
	}{
		{"", "", ""},
		{parserHermes, reasoningQwen3, ""},
		{parserQwen3Coder, "", ""},
		{parserLlama3JSON, "", ""},
		{parserGLM45, "", "<arg_key> </arg_key> <arg_value> </arg_value>"},
		{parserKimiK2, "", "<|tool_calls_section_begin|>"},
		{parserMistral, "", "[TOOL_CALLS]"},
		{parserHermes, reasoningMistral, "tool_call_parser hermes with reasoning_parser mistral (supported"}, // not a registered pair
		{"nonesuch", "", "tool_call_parser nonesuch"},
		{parserHermes, "nonesuch", "reasoning_parser nonesuch"},
	}
	for _, tt := range tests {
		_, err := newFamily(qwenLike, tt.tool, tt.reasoning)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s/%s: %v", tt.tool, tt.reasoning, err)
		case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
			t.Errorf("%s/%s: err %v, want one naming %s", tt.tool, tt.reasoning, err, tt.wantErr)
		}
	}
	if _, err := newFamily(mapTokens{"[TOOL_CALLS]": true}, parserMistral, reasoningMistral); err == nil || !strings.Contains(err.Error(), "[THINK] [/THINK]") {
		t.Errorf("mistral/mistral without [THINK]: err %v, want one naming [THINK] [/THINK]", err)
	}
	f, err := newFamily(mapTokens{"[TOOL_CALLS]": true, "[CALL_ID]": true, "[ARGS]": true}, parserMistral, "")
	if err != nil || !strings.Contains(strings.Join(f.calls.markers, " "), "[CALL_ID]") {
		t.Errorf("a tokenizer with [CALL_ID] and [ARGS] must get Small 3.2's form: %v", err)
	}
}

// TestDialects reads each family's markup back (prompts as their chat templates render them).
func TestDialects(t *testing.T) {
	tools := `{"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}`
	tests := []struct {
		name     string
		d        dialect
		prompt   string
		lastRole string
		user     string
		open     bool
		prefill  string
	}{
		{"llama3 tool result", dialects[1].d,
			"<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\n" + tools + "\n\nWeather?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \"parameters\": {}}<|eot_id|><|start_header_id|>ipython<|end_header_id|>\n\n\"sunny\"<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
			"tool", "Weather?", true, ""},
		{"mistral", dialects[2].d,
			"<s>[AVAILABLE_TOOLS][" + tools + "][/AVAILABLE_TOOLS][INST]Weather?[/INST]",
			"user", "Weather?", true, ""},
		{"mistral tool result", dialects[2].d,
			"<s>[INST]Weather?[/INST][TOOL_CALLS][{\"name\": \"get_weather\"}]</s>[TOOL_RESULTS]{\"content\": sunny}[/TOOL_RESULTS]",
			"tool", "Weather?", true, ""},
		{"deepseek thinking", dialects[3].d,
			"<｜begin▁of▁sentence｜>" + tools + "<｜User｜>Weather?<｜Assistant｜><think>",
			"user", "Weather?", true, "<think>"},
		{"deepseek tool output", dialects[3].d,
			"<｜begin▁of▁sentence｜><｜User｜>Weather?<｜Assistant｜><｜tool▁calls▁begin｜>x<｜tool▁calls▁end｜><｜end▁of▁sentence｜><｜tool▁outputs▁begin｜><｜tool▁output▁begin｜>sunny<｜tool▁output▁end｜><｜tool▁outputs▁end｜>",
			"tool", "Weather?", true, ""},
		{"glm", dialects[4].d,
			"[gMASK]<sop><|system|>\n" + tools + "<|user|>\nWeather?<|assistant|>\n<think>",
			"user", "\nWeather?", true, "\n<think>"},
		{"kimi tool", dialects[5].d,
			"<|im_system|>system<|im_middle|>" + tools + "<|im_end|><|im_user|>user<|im_middle|>Weather?<|im_end|><|im_system|>tool<|im_middle|>sunny<|im_end|><|im_assistant|>assistant<|im_middle|>",
			"tool", "Weather?", true, ""},
		{"not a chat", dialects[3].d, "Once upon a time", "", "", false, ""},
	}
	for _, tt := range tests {
		c := tt.d.parse(tt.prompt)
		if c.lastTurn().role != tt.lastRole || c.lastUserText() != tt.user || c.open != tt.open || c.prefill != tt.prefill {
			t.Errorf("%s: last role %q user %q open %v prefill %q; turns %+v", tt.name, c.lastTurn().role, c.lastUserText(), c.open, c.prefill, c.turns)
		}
		if tt.open && tt.name != "mistral tool result" && tt.name != "deepseek tool output" && (len(c.tools) != 1 || c.tools[0].name != "get_weather") {
			t.Errorf("%s: tools %+v", tt.name, c.tools)
		}
	}
}

// TestWritersCoverRegistry: the simulator can answer in every family package family registers (the
// registry is the one table of supported pairs; the simulator only writes them).
func TestWritersCoverRegistry(t *testing.T) {
	for _, n := range modelfamily.Supported() {
		if n == modelfamily.HarmonyNames() {
			continue // Harmony is its own dialect (harmony.go)
		}
		if _, ok := callWriters[n.ToolCallParser]; !ok {
			t.Errorf("%v: no call writer for %s", n, n.ToolCallParser)
		}
		if _, ok := reasoningWriters[n.ReasoningParser]; n.ReasoningParser != "" && !ok {
			t.Errorf("%v: no reasoning writer for %s", n, n.ReasoningParser)
		}
	}
}
