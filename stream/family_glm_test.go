package stream_test

import (
	"testing"

	"github.com/stitchllm/stitch/stream"
)

type famOpts = stream.FamilyOptions

var glm45Suite = famSuite{
	tool: "glm45", reasoning: "glm45", endOfTurn: []string{"<|user|>", "<|endoftext|>"}, tools: weatherTools,
	cases: []famCase{
		{name: "reasoning and text", output: "<think>hmm</think>\nHi.<|user|>", want: []outItem{reasoning("hmm"), text("Hi.")}},
		{name: "one call", output: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call><|user|>",
			want: []outItem{call("get_weather", `{"city": "Paris", "days": 3}`)}},
		{name: "string typed stays string", output: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>42</arg_value>\n</tool_call><|user|>",
			want: []outItem{call("get_weather", `{"city": "42"}`)}},
		{name: "untyped deserialized", output: "<tool_call>other\n<arg_key>a</arg_key>\n<arg_value>{\"x\": [1,2]}</arg_value>\n<arg_key>b</arg_key>\n<arg_value>{'y': None}</arg_value>\n<arg_key>c</arg_key>\n<arg_value>plain words</arg_value>\n</tool_call><|user|>",
			want: []outItem{call("other", `{"a": {"x": [1, 2]}, "b": {"y": null}, "c": "plain words"}`)}},
		{name: "parallel with text", output: "<think>x</think>Sure.\n<tool_call>f\n</tool_call>\n<tool_call>g\n<arg_key>k</arg_key><arg_value>v</arg_value>\n</tool_call><|user|>",
			want: []outItem{reasoning("x"), text("Sure."), call("f", `{}`), call("g", `{"k": "v"}`)}},
		{name: "junk breaks", output: "<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>1</arg_value>\njunk</tool_call>after<|user|>",
			want: []outItem{incomplete("f", `{"k": 1`), text("after")}, malformed: true},
		{name: "empty name is text", output: "<tool_call>\n</tool_call><|user|>", want: []outItem{text("<tool_call>\n</tool_call>")}},
		{name: "string value streams stripped", output: "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>\n  New \"York\"\n \x1f</arg_value>\n</tool_call><|user|>",
			want: []outItem{call("get_weather", `{"city": "New \"York\""}`)}},
		{name: "cut", output: "<tool_call>f\n<arg_key>k</arg_key>\n<arg_value>1", want: []outItem{incomplete("f", ``)}},
		{name: "forced named", prefill: "<tool_call>get_weather\n", output: "<arg_key>city</arg_key>\n<arg_value>Oslo</arg_value>\n</tool_call><|user|>",
			want: []outItem{call("get_weather", `{"city": "Oslo"}`)}},
	},
}

func TestFamilyGLM45(t *testing.T) { glm45Suite.run(t) }
func FuzzFamilyGLM45(f *testing.F) { glm45Suite.fuzz(f) }

var glm47Suite = famSuite{
	tool: "glm47", reasoning: "glm45", endOfTurn: []string{"<|user|>", "<|endoftext|>"}, tools: weatherTools,
	cases: []famCase{
		{name: "one call", output: "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>temp</arg_key><arg_value>1.50</arg_value></tool_call><|user|>",
			want: []outItem{call("get_weather", `{"city": "Paris", "temp": 1.5}`)}},
		{name: "no args", output: "<tool_call>noop</tool_call><|user|>", want: []outItem{call("noop", `{}`)}},
		{name: "thinking open", opts: func(o *famOpts) { o.ThinkingOpen = true }, output: "plan</think><tool_call>noop</tool_call><|user|>",
			want: []outItem{reasoning("plan"), call("noop", `{}`)}},
		{name: "forced required", prefill: "<tool_call>", output: "noop</tool_call><|user|>", want: []outItem{call("noop", `{}`)}},
	},
}

func TestFamilyGLM47(t *testing.T) { glm47Suite.run(t) }
func FuzzFamilyGLM47(f *testing.F) { glm47Suite.fuzz(f) }
