package stream_test

import (
	"testing"

	"github.com/stitchllm/stitch/stream"
)

const weatherTools = `[{"name": "get_weather", "parameters": {"type": "object", "properties": {
	"city": {"type": "string"}, "days": {"type": "integer"}, "temp": {"type": "number"}, "metric": {"type": "boolean"},
	"opts": {"type": "object"}, "tags": {"type": "array"}, "note": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}},
	{"name": "noop", "parameters": {"type": "object", "properties": {}}}]`

var qwen3CoderSuite = famSuite{
	tool: "qwen3_coder", reasoning: "qwen3", endOfTurn: []string{"<|im_end|>", "<|endoftext|>"}, bpe: []string{"qwen3"},
	tools: weatherTools,
	cases: []famCase{
		{name: "text only", output: "Hello there.<|im_end|>", want: []outItem{text("Hello there.")}},
		{name: "one call typed", output: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("get_weather", `{"city": "Paris", "days": 3}`)}},
		{name: "unknown tool keeps strings", output: "<tool_call>\n<function=other>\n<parameter=days>\n3\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("other", `{"days": "3"}`)}},
		{name: "conversions", output: "<tool_call>\n<function=get_weather>\n<parameter=temp>\n2.0\n</parameter>\n<parameter=metric>\nTrue\n</parameter>\n<parameter=opts>\n{\"a\": [1, 2.50], \"b\": \"é\"}\n</parameter>\n<parameter=tags>\n['x', \"y\"]\n</parameter>\n<parameter=note>\nnull\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("get_weather", `{"temp": 2, "metric": true, "opts": {"a": [1, 2.5], "b": "é"}, "tags": ["x", "y"], "note": null}`)}},
		{name: "float and bad int", output: "<tool_call>\n<function=get_weather>\n<parameter=temp>\n-1.25\n</parameter>\n<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("get_weather", `{"temp": -1.25, "days": "three"}`)}},
		{name: "multiline string value", output: "<tool_call>\n<function=get_weather>\n<parameter=city>\n\nline \"1\"\n\tline 2\n\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("get_weather", `{"city": "\nline \"1\"\n\tline 2\n"}`)}},
		{name: "no parameters", output: "<tool_call>\n<function=noop>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("noop", `{}`)}},
		{name: "text then parallel calls", output: "Checking both.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n<parameter=city>\nRome\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{text("Checking both."), call("get_weather", `{"city": "Paris"}`), call("get_weather", `{"city": "Rome"}`)}},
		{name: "reasoning then call", output: "<think>\nNeed weather.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{reasoning("Need weather."), call("get_weather", `{"city": "Paris"}`)}},
		{name: "not a call is text", output: "<tool_call>\nhello\n</tool_call><|im_end|>",
			want: []outItem{text("<tool_call>\nhello\n</tool_call>")}},
		{name: "bad function name is text", output: "<tool_call>\n<function={{ name }}>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{text("<tool_call>\n<function={{ name }}>\n</function>\n</tool_call>")}},
		{name: "text after a parameter end belongs to the value", output: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\njunk\n</function>\n</tool_call>\nafter<|im_end|>",
			want: []outItem{call("get_weather", `{"city": "Paris\n</parameter>\njunk"}`), text("after")}},
		{name: "literal end tag in a value", output: "<tool_call>\n<function=w>\n<parameter=code>\nx = \"</parameter>\" + y\n</parameter>\n<parameter=n>\n1\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("w", `{"code": "x = \"</parameter>\" + y", "n": "1"}`)}},
		{name: "missing parameter end", output: "<tool_call>\n<function=w>\n<parameter=code>\nabc\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("w", `{"code": "abc"}`)}},
		{name: "text between parameters is skipped", output: "<tool_call>\n<function=w>\nnoise\n<parameter=a>\n1\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("w", `{"a": "1"}`)}},
		{name: "new call inside a call", output: "<tool_call>\n<function=w>\n<parameter=a>\n1\n</parameter>\n<tool_call>\n<function=v>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{incomplete("w", `{"a": "1`), call("v", `{}`)}, malformed: true},
		{name: "cut in a value", output: "<tool_call>\n<function=get_weather>\n<parameter=city>\nPar",
			want: []outItem{incomplete("get_weather", `{"city": "Par`)}},
		{name: "cut in a typed value", output: "<tool_call>\n<function=get_weather>\n<parameter=days>\n1",
			want: []outItem{incomplete("get_weather", ``)}},
		{name: "string value holding tag look-alikes", output: "<tool_call>\n<function=w>\n<parameter=code>\na </param b\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want: []outItem{call("w", `{"code": "a </param b"}`)}},
		{name: "value end without newline", output: "<tool_call>\n<function=w>\n<parameter=code>x\n\n</parameter></function></tool_call><|im_end|>",
			want: []outItem{call("w", `{"code": "x\n"}`)}},
		{name: "missing function end accepted", output: "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n</tool_call><|im_end|>",
			want: []outItem{call("get_weather", `{"city": "Paris"}`)}},
		{name: "whole call without end marker", output: "<tool_call>\n<function=noop>\n</function>\n<|im_end|>",
			want: []outItem{call("noop", `{}`)}},
		{name: "forced named", prefill: "<tool_call>\n<function=get_weather>\n",
			output: "<parameter=city>\nOslo\n</parameter>\n</function>\n</tool_call><|im_end|>",
			want:   []outItem{call("get_weather", `{"city": "Oslo"}`)}},
		{name: "forced required", prefill: "<tool_call>\n<function=",
			output: "noop>\n</function>\n</tool_call><|im_end|>",
			want:   []outItem{call("noop", `{}`)}},
		{name: "parallel off", opts: func(o *stream.FamilyOptions) { o.ParallelToolCalls = false },
			output: "<tool_call>\n<function=noop>\n</function>\n</tool_call>\n<tool_call>\n<function=get_weather>\n</function>\n</tool_call><|im_end|>",
			want:   []outItem{call("noop", `{}`)}},
	},
}

func TestFamilyQwen3Coder(t *testing.T) { qwen3CoderSuite.run(t) }
func FuzzFamilyQwen3Coder(f *testing.F) { qwen3CoderSuite.fuzz(f) }
