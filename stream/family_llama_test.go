package stream_test

import (
	"strings"
	"testing"
)

var llama3JSONSuite = famSuite{
	tool: "llama3_json", endOfTurn: []string{"<|eot_id|>", "<|eom_id|>"}, bpe: []string{"llama3_2"},
	cases: []famCase{
		{name: "text", output: "The sky is blue.<|eot_id|>", want: []outItem{text("The sky is blue.")}},
		{name: "bare call", output: `{"name": "get_weather", "parameters": {"city": "Paris", "n": [1, 2.50]}}<|eot_id|>`,
			want: []outItem{call("get_weather", `{"city": "Paris", "n": [1, 2.50]}`)}},
		{name: "python tag", output: `<|python_tag|>{"name": "f", "arguments": {"a": "é\n"}}<|eom_id|>`,
			want: []outItem{call("f", `{"a": "é\n"}`)}},
		{name: "parallel separated by semicolon", output: `{"name": "f", "parameters": {}}; {"name": "g", "parameters": {"b": true}}<|eot_id|>`,
			want: []outItem{call("f", `{}`), call("g", `{"b": true}`)}},
		{name: "json that is not a call is text", output: `{"answer": 42}<|eot_id|>`, want: []outItem{text(`{"answer": 42}`)}},
		{name: "call after text is text", output: `Sure: {"name": "f", "parameters": {}}<|eot_id|>`,
			want: []outItem{text(`Sure: {"name": "f", "parameters": {}}`)}},
		{name: "leading newline", output: "\n{\"name\": \"f\", \"parameters\": {}}<|eot_id|>", want: []outItem{call("f", `{}`)}},
		{name: "text after call", output: `{"name": "f", "parameters": {}} done<|eot_id|>`,
			want: []outItem{call("f", `{}`), text("done")}},
		{name: "broken after begin", output: `{"name": "f", "parameters": {"a": 1,,}} trailing<|eot_id|>`,
			want: []outItem{incomplete("f", `{"a": 1,`)}, malformed: true},
		{name: "cut", output: `{"name": "f", "parameters": {"a": "x`, want: []outItem{incomplete("f", `{"a": "x`)}},
		{name: "missing outer brace accepted", output: `{"name": "f", "parameters": {"a": 1}<|eot_id|>`,
			want: []outItem{call("f", `{"a": 1}`)}},
		{name: "forced named", prefill: `{"name": "f", "parameters": `, output: `{"q": "x"}}<|eot_id|>`,
			want: []outItem{call("f", `{"q": "x"}`)}},
	},
}

func TestFamilyLlama3JSON(t *testing.T) { llama3JSONSuite.run(t) }
func FuzzFamilyLlama3JSON(f *testing.F) { llama3JSONSuite.fuzz(f) }

var pythonicSuite = famSuite{
	tool: "pythonic", endOfTurn: []string{"<|eot_id|>", "<|eom_id|>"}, bpe: []string{"llama3_2"},
	cases: []famCase{
		{name: "text", output: "Hi!<|eot_id|>", want: []outItem{text("Hi!")}},
		{name: "one call", output: `[get_weather(city="Paris", days=3)]<|eot_id|>`,
			want: []outItem{call("get_weather", `{"city": "Paris", "days": 3}`)}},
		{name: "literals", output: `[f(a='it\'s', b=True, c=None, d=[1, 2.0, -3], e={'k': (1, 2)}, g=1e20, h="é")]<|eot_id|>`,
			want: []outItem{call("f", `{"a": "it's", "b": true, "c": null, "d": [1, 2.0, -3], "e": {"k": [1, 2]}, "g": 1e+20, "h": "é"}`)}},
		{name: "parallel", output: "[f(), g(x=\"a, b)\")]<|eot_id|>",
			want: []outItem{call("f", `{}`), call("g", `{"x": "a, b)"}`)}},
		{name: "plain list is text", output: `[1, 2, 3]<|eot_id|>`, want: []outItem{text(`[1, 2, 3]`)}},
		{name: "positional argument is text", output: `[f(1)]<|eot_id|>`, want: []outItem{text(`[f(1)]`)}},
		{name: "non-literal breaks", output: `[f(a=x)]<|eot_id|>`, want: []outItem{incomplete("f", ``)}, malformed: true},
		{name: "cut", output: `[f(a=1, b="x`, want: []outItem{incomplete("f", `{"a": 1`)}},
		{name: "text after list", output: "[f()]\nDone.<|eot_id|>", want: []outItem{call("f", `{}`), text("Done.")}},
		{name: "forced named", prefill: "[f(", output: "a=1)]<|eot_id|>", want: []outItem{call("f", `{"a": 1}`)}},
	},
}

func TestFamilyPythonic(t *testing.T) { pythonicSuite.run(t) }
func FuzzFamilyPythonic(f *testing.F) { pythonicSuite.fuzz(f) }

// Gemma 3 writes the same pythonic calls (vLLM's pythonic parser with its
// tool template); the Gemma tokenizer splits text differently.
func TestFamilyPythonicGemma(t *testing.T) {
	s := pythonicSuite
	s.endOfTurn, s.bpe, s.cases = []string{"<end_of_turn>"}, []string{"gemma3"}, nil
	for _, tc := range pythonicSuite.cases {
		tc.output = strings.ReplaceAll(tc.output, "<|eot_id|>", "<end_of_turn>")
		s.cases = append(s.cases, tc)
	}
	s.run(t)
}
