package stream_test

import (
	"testing"
)

const (
	dsCalls   = "<｜tool▁calls▁begin｜>"
	dsCallsE  = "<｜tool▁calls▁end｜>"
	dsCall    = "<｜tool▁call▁begin｜>"
	dsCallE   = "<｜tool▁call▁end｜>"
	dsSep     = "<｜tool▁sep｜>"
	dsEOS     = "<｜end▁of▁sentence｜>"
	kimiSec   = "<|tool_calls_section_begin|>"
	kimiSecE  = "<|tool_calls_section_end|>"
	kimiCall  = "<|tool_call_begin|>"
	kimiCallE = "<|tool_call_end|>"
	kimiArg   = "<|tool_call_argument_begin|>"
)

var deepseekV3Suite = famSuite{
	tool: "deepseek_v3", endOfTurn: []string{dsEOS}, bpe: []string{"deepseek_v3"},
	cases: []famCase{
		{name: "text", output: "Hello." + dsEOS, want: []outItem{text("Hello.")}},
		{name: "one call", output: dsCalls + dsCall + "function" + dsSep + "get_weather\n```json\n{\"city\": \"Paris\"}\n```" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{call("get_weather", `{"city": "Paris"}`)}},
		{name: "text then parallel", output: "Checking.\n\n" + dsCalls + dsCall + "function" + dsSep + "f\n```json\n{}\n```" + dsCallE + "\n" + dsCall + "function" + dsSep + "g\n```json\n{\"a\": [1, 2]}\n```" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{text("Checking."), call("f", `{}`), call("g", `{"a": [1, 2]}`)}},
		{name: "missing fence is text", output: dsCalls + dsCall + "function" + dsSep + "f\n{}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{text(dsCalls + dsCall + "function" + dsSep + "f\n{}" + dsCallE + dsCallsE)}},
		{name: "broken args", output: dsCalls + dsCall + "function" + dsSep + "f\n```json\n{\"a\": }\n```" + dsCallE + dsCallsE + "after" + dsEOS,
			want: []outItem{incomplete("f", `{"a": `), text("after")}, malformed: true},
		{name: "cut", output: dsCalls + dsCall + "function" + dsSep + "f\n```json\n{\"a\": 1", want: []outItem{incomplete("f", `{"a": 1`)}},
		{name: "forced named", prefill: dsCalls + dsCall + "function" + dsSep + "f\n```json\n", output: "{\"q\": 2}\n```" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{call("f", `{"q": 2}`)}},
	},
}

func TestFamilyDeepSeekV3(t *testing.T) { deepseekV3Suite.run(t) }
func FuzzFamilyDeepSeekV3(f *testing.F) { deepseekV3Suite.fuzz(f) }

var deepseekV31Suite = famSuite{
	tool: "deepseek_v31", endOfTurn: []string{dsEOS}, bpe: []string{"deepseek_v3"},
	cases: []famCase{
		{name: "one call", output: dsCalls + dsCall + "get_weather" + dsSep + "{\"city\": \"Paris\"}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{call("get_weather", `{"city": "Paris"}`)}},
		{name: "parallel", output: dsCalls + dsCall + "f" + dsSep + "{}" + dsCallE + dsCall + "g" + dsSep + "{\"b\": \"é\"}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{call("f", `{}`), call("g", `{"b": "é"}`)}},
		{name: "text after calls", output: dsCalls + dsCall + "f" + dsSep + "{}" + dsCallE + dsCallsE + "Done." + dsEOS,
			want: []outItem{call("f", `{}`), text("Done.")}},
		{name: "empty name is text", output: dsCalls + dsCall + dsSep + "{}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{text(dsCalls + dsCall + dsSep + "{}" + dsCallE + dsCallsE)}},
		{name: "call end inside args", output: dsCalls + dsCall + "f" + dsSep + "{\"a\": " + dsCallE + dsCall + "g" + dsSep + "{}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{incomplete("f", `{"a": `), call("g", `{}`)}, malformed: true},
		{name: "without section begin", output: dsCall + "f" + dsSep + "{}" + dsCallE + dsEOS, want: []outItem{call("f", `{}`)}},
		{name: "forced required", prefill: dsCalls + dsCall, output: "f" + dsSep + "{}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{call("f", `{}`)}},
	},
}

func TestFamilyDeepSeekV31(t *testing.T) { deepseekV31Suite.run(t) }
func FuzzFamilyDeepSeekV31(f *testing.F) { deepseekV31Suite.fuzz(f) }

// DeepSeek-R1 style reasoning with V3.1 tool calls (synthetic tokenizer:
// the stored DeepSeek-V3 tokenizer has no <think> tokens).
var deepseekR1Suite = famSuite{
	tool: "deepseek_v31", reasoning: "deepseek_r1", endOfTurn: []string{dsEOS},
	cases: []famCase{
		{name: "reasoning without start", output: "hmm\n</think>\n\nAnswer." + dsEOS, want: []outItem{reasoning("hmm"), text("Answer.")}},
		{name: "reasoning with start", output: "<think>\nhmm\n</think>\n\nAnswer." + dsEOS, want: []outItem{reasoning("hmm"), text("Answer.")}},
		{name: "never closed is reasoning", output: "still thinking" + dsEOS, want: []outItem{reasoning("still thinking")}},
		{name: "reasoning then call", output: "x</think>" + dsCalls + dsCall + "f" + dsSep + "{}" + dsCallE + dsCallsE + dsEOS,
			want: []outItem{reasoning("x"), call("f", `{}`)}},
	},
}

func TestFamilyDeepSeekR1(t *testing.T) { deepseekR1Suite.run(t) }

var kimiSuite = famSuite{
	tool: "kimi_k2", reasoning: "kimi_k2", endOfTurn: []string{"<|im_end|>"},
	cases: []famCase{
		{name: "reasoning and text", output: "<think>plan</think>Hi.<|im_end|>", want: []outItem{reasoning("plan"), text("Hi.")}},
		{name: "one call", output: "</think>" + kimiSec + kimiCall + "functions.get_weather:0" + kimiArg + "{\"city\": \"Paris\"}" + kimiCallE + kimiSecE + "<|im_end|>",
			want: []outItem{callID("get_weather", `{"city": "Paris"}`, "functions.get_weather:0")}},
		{name: "parallel", output: "ok</think>Looking." + kimiSec + kimiCall + " functions.f:0 " + kimiArg + " {} " + kimiCallE + kimiCall + "functions.g:1" + kimiArg + "{\"a\": 1}" + kimiCallE + kimiSecE + "<|im_end|>",
			want: []outItem{reasoning("ok"), text("Looking."), callID("f", `{}`, "functions.f:0"), callID("g", `{"a": 1}`, "functions.g:1")}},
		{name: "bad id is text", output: "</think>" + kimiSec + kimiCall + "get_weather" + kimiArg + "{}" + kimiCallE + kimiSecE + "<|im_end|>",
			want: []outItem{text(kimiSec + kimiCall + "get_weather" + kimiArg + "{}" + kimiCallE + kimiSecE)}},
		{name: "broken", output: "</think>" + kimiSec + kimiCall + "functions.f:0" + kimiArg + "{\"a\" 1}" + kimiCallE + kimiSecE + "<|im_end|>",
			want: []outItem{{Kind: "call", Name: "f", Text: `{"a" `, Incomplete: true, CallID: "functions.f:0"}}, malformed: true},
		{name: "no content placeholder dropped", output: "</think>(no content)" + kimiSec + kimiCall + "functions.f:0" + kimiArg + "{}" + kimiCallE + kimiSecE + "<|im_end|>",
			want: []outItem{callID("f", `{}`, "functions.f:0")}},
		{name: "placeholder inside text", output: "</think>a (no content) b (no<|im_end|>", want: []outItem{text("a  b (no")}},
		{name: "forced named", opts: nil, prefill: "</think>" + kimiSec + kimiCall + "functions.f:0" + kimiArg, output: "{}" + kimiCallE + kimiSecE + "<|im_end|>",
			want: []outItem{callID("f", `{}`, "functions.f:0")}},
	},
}

func TestFamilyKimiK2(t *testing.T) { kimiSuite.run(t) }
func FuzzFamilyKimiK2(f *testing.F) { kimiSuite.fuzz(f) }
