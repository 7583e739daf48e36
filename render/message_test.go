package render

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseChatRequest(t *testing.T) {
	t.Parallel()
	line := `{"messages":[
		{"role":"system","content":[{"type":"text","text":"a"},{"type":"text","text":null},"b"]},
		{"role":"user","content":null,"name":"u","tool_call_id":"dropped"},
		{"role":"assistant","content":"x","reasoning_content":"r","tool_calls":[{"id":"1","type":"function","function":{"name":"f","arguments":{"k":1E3}}}]},
		{"role":"assistant","content":"y","reasoning":"r2","reasoning_content":"ignored","tool_calls":[]},
		{"role":"tool","tool_call_id":"1","content":[{"type":"text","text":"out"}]}],
		"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":true}},{"x":[1.0],"function":{"description":"d","name":"g"}}],
		"add_generation_prompt":false,"chat_template_kwargs":{"enable_thinking":false},"extra":1}`
	got, err := ParseChatRequest([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	want := ChatRequest{
		Messages: []Message{
			{Role: "system", Content: "a\nb", Parts: []Part{{Text: "a"}, {Text: "b"}}},
			{Role: "user", Name: ptr("u"), NullContent: true},
			{Role: "assistant", Content: "x", Reasoning: ptr("r"), ToolCalls: []ToolCall{{ID: "1", Type: "function", Name: "f", Arguments: []byte(`{"k":1E3}`)}}},
			{Role: "assistant", Content: "y", Reasoning: ptr("r2")},
			{Role: "tool", Content: "out", Parts: []Part{{Text: "out"}}, ToolCallID: ptr("1")},
		},
		Tools: []Tool{
			{Name: "f", Parameters: []byte(`{"type":"object"}`), FunctionExtra: []Field{{Key: "strict", Value: []byte("true")}}},
			{Name: "g", Description: ptr("d"), Extra: []Field{{Key: "x", Value: []byte("[1.0]")}}},
		},
		ChatTemplateKwargs: []byte(`{"enable_thinking":false}`),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseChatRequest (-want +got):\n%s", diff)
	}
}

func TestParseChatRequestErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ line, param string }{
		{`{"messages":{}}`, "messages"},
		{`{"messages":[{"content":"x"}]}`, "messages[0].role"},
		{`{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, "messages[0].content[0].type"},
		{`{"messages":[{"role":"user","content":5}]}`, "messages[0].content"},
		{`{"messages":[{"role":"assistant","tool_calls":[{"function":{}}]}]}`, "messages[0].tool_calls[0].function.name"},
		{`{"messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":[]}}]}`, "tools[0].function.parameters"},
		{`{"messages":[],"add_generation_prompt":"yes"}`, "add_generation_prompt"},
	} {
		_, err := ParseChatRequest([]byte(tt.line))
		var ie *InputError
		if !errors.As(err, &ie) || ie.Param != tt.param {
			t.Errorf("ParseChatRequest(%s) error = %v, want param %q", tt.line, err, tt.param)
		}
	}
}

func FuzzParseChatRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}],"tools":[{"function":{"name":"f"}}]}`))
	f.Add([]byte(`{"messages":[{"role":"tool","content":null,"tool_call_id":"x"}],"chat_template_kwargs":{"a":[1,2.0]}}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		req, err := ParseChatRequest(line)
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			return
		}
		if _, err := messageValues(req.Messages, ContentString, nil); err != nil {
			t.Fatalf("messageValues: %v", err)
		}
	})
}

// TestChatToolsEmptyList: `tools: []` reaches the template as [] and only an absent (or null)
// field as None, as in vLLM.
func TestChatToolsEmptyList(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line    string
		wantNil bool
	}{
		{`{"messages":[],"tools":[]}`, false},
		{`{"messages":[]}`, true},
		{`{"messages":[],"tools":null}`, true},
	} {
		req, err := ParseChatRequest([]byte(tt.line))
		if err != nil {
			t.Fatal(err)
		}
		if (req.Tools == nil) != tt.wantNil {
			t.Errorf("%s: Tools = %#v, want nil %v", tt.line, req.Tools, tt.wantNil)
		}
	}
}
