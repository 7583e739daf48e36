package stream_test

import (
	"testing"
)

// Mistral Nemo (pre-v11 tokenizer): a JSON array after [TOOL_CALLS], with
// the model's 9-character ids.
var mistralNemoSuite = famSuite{
	tool: "mistral", endOfTurn: []string{"</s>"}, bpe: []string{"mistral_nemo"},
	cases: []famCase{
		{name: "text", output: "Bonjour !</s>", want: []outItem{text("Bonjour !")}},
		{name: "one call with id", output: `[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "a1b2C3d4E"}]</s>`,
			want: []outItem{callID("get_weather", `{"city": "Paris"}`, "a1b2C3d4E")}},
		{name: "parallel", output: `[TOOL_CALLS] [{"name": "f", "arguments": {}, "id": "aaaaaaaaa"}, {"id": "bbbbbbbbb", "name": "g", "arguments": {"x": [1]}}]</s>`,
			want: []outItem{callID("f", `{}`, "aaaaaaaaa"), callID("g", `{"x": [1]}`, "bbbbbbbbb")}},
		{name: "no id", output: `[TOOL_CALLS][{"name": "f", "arguments": {"a": 1}}]</s>`, want: []outItem{call("f", `{"a": 1}`)}},
		{name: "text then call", output: "Let me check.[TOOL_CALLS][{\"name\": \"f\", \"arguments\": {}}]</s>",
			want: []outItem{text("Let me check."), call("f", `{}`)}},
		{name: "not json is text", output: "[TOOL_CALLS] oops</s>", want: []outItem{text("[TOOL_CALLS] oops")}},
		{name: "broken after begin", output: `[TOOL_CALLS][{"name": "f", "arguments": {"a": }}]</s>`,
			want: []outItem{incomplete("f", `{"a": `)}, malformed: true},
		{name: "cut", output: `[TOOL_CALLS][{"name": "f", "arguments": {"a": "b`, want: []outItem{incomplete("f", `{"a": "b`)}},
		{name: "forced required", prefill: "[TOOL_CALLS]", output: `[{"name": "f", "arguments": {}}]</s>`,
			want: []outItem{call("f", `{}`)}},
		{name: "forced named pre-v11", prefill: `[TOOL_CALLS][{"name": "f", "arguments": `, output: `{"x": 1}}]</s>`,
			want: []outItem{call("f", `{"x": 1}`)}},
	},
}

func TestFamilyMistralNemo(t *testing.T) { mistralNemoSuite.run(t) }
func FuzzFamilyMistralNemo(f *testing.F) { mistralNemoSuite.fuzz(f) }

// Mistral Small 3.2 / Magistral (v11+ tokenizers): NAME[CALL_ID]ID[ARGS]{…}
// per [TOOL_CALLS], and [THINK] reasoning. Nemo's tokenizer lacks [ARGS] and
// [CALL_ID], so these run on the synthetic tokenizer only.
var mistralV11Suite = famSuite{
	tool: "mistral", reasoning: "mistral", endOfTurn: []string{"</s>"},
	cases: []famCase{
		{name: "call id and args", output: `[TOOL_CALLS]get_weather[CALL_ID]a1b2C3d4E[ARGS]{"city": "Paris"}</s>`,
			want: []outItem{callID("get_weather", `{"city": "Paris"}`, "a1b2C3d4E")}},
		{name: "no call id", output: `[TOOL_CALLS]get_weather[ARGS]{"city": "Paris"}</s>`,
			want: []outItem{call("get_weather", `{"city": "Paris"}`)}},
		{name: "v11 bare", output: `[TOOL_CALLS]add{"a": 3.5, "b": 4}</s>`, want: []outItem{call("add", `{"a": 3.5, "b": 4}`)}},
		{name: "parallel", output: `[TOOL_CALLS]f[CALL_ID]aaaaaaaaa[ARGS]{}[TOOL_CALLS]g[CALL_ID]bbbbbbbbb[ARGS]{"x": 1}</s>`,
			want: []outItem{callID("f", `{}`, "aaaaaaaaa"), callID("g", `{"x": 1}`, "bbbbbbbbb")}},
		{name: "reasoning", output: "[THINK]\nweather?\n[/THINK]\nSure.[TOOL_CALLS]f[ARGS]{}</s>",
			want: []outItem{reasoning("weather?"), text("Sure."), call("f", `{}`)}},
		{name: "broken args", output: `[TOOL_CALLS]f[ARGS]{"a" 1}</s>`, want: []outItem{incomplete("f", `{"a" `)}, malformed: true},
		{name: "name with space is text", output: `[TOOL_CALLS]get weather[ARGS]{}</s>`, want: []outItem{text(`[TOOL_CALLS]get weather[ARGS]{}`)}},
		{name: "forced named", prefill: "[TOOL_CALLS]f", output: `[CALL_ID]zzzzzzzzz[ARGS]{"q": 1}</s>`,
			want: []outItem{callID("f", `{"q": 1}`, "zzzzzzzzz")}},
	},
}

func TestFamilyMistralV11(t *testing.T) { mistralV11Suite.run(t) }
func FuzzFamilyMistralV11(f *testing.F) { mistralV11Suite.fuzz(f) }
