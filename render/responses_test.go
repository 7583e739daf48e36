package render

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func ptr(s string) *string { return &s }

func items(t *testing.T, js string) []json.RawMessage {
	t.Helper()
	var out []json.RawMessage
	if err := json.Unmarshal([]byte(js), &out); err != nil {
		t.Fatalf("bad test input %s: %v", js, err)
	}
	return out
}

func TestFromResponses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		instructions string
		input        string
		tools        string
		want         []Message
		wantTools    []Tool
		wantSkipped  []string
	}{
		{
			name:         "instructions and untyped user message",
			instructions: "Be brief.",
			input:        `[{"role":"user","content":"hi"}]`,
			want:         []Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "hi"}},
		},
		{
			name:  "developer becomes system, parts joined",
			input: `[{"type":"message","role":"developer","content":[{"type":"input_text","text":"a"},{"type":"input_text","text":"b"}]},{"role":"user","content":[{"type":"input_text","text":"q"}]}]`,
			want:  []Message{{Role: "system", Content: "a\nb"}, {Role: "user", Content: "q"}},
		},
		{
			name: "reasoning, message and parallel calls form one assistant turn",
			input: `[{"role":"user","content":"q"},
				{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},
				{"type":"message","role":"assistant","id":"msg_1","status":"completed","content":[{"type":"output_text","text":"Let me check.","annotations":[]}]},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1.0}"},
				{"type":"function_call","call_id":"c2","name":"g","arguments":""},
				{"type":"function_call_output","call_id":"c1","output":"r1"},
				{"type":"function_call_output","call_id":"c2","output":[{"type":"input_text","text":"r2"}]}]`,
			want: []Message{
				{Role: "user", Content: "q"},
				{Role: "assistant", Content: "Let me check.", Reasoning: ptr("think"), ToolCalls: []ToolCall{
					{ID: "c1", Type: "function", Name: "f", Arguments: json.RawMessage(`"{\"a\":1.0}"`)},
					{ID: "c2", Type: "function", Name: "g", Arguments: json.RawMessage(`""`)},
				}},
				{Role: "tool", Content: "r1", ToolCallID: ptr("c1")},
				{Role: "tool", Content: "r2", ToolCallID: ptr("c2")},
			},
		},
		{
			name: "calls alone; reasoning between calls starts a new turn",
			input: `[{"role":"user","content":"q"},
				{"type":"reasoning","id":"rs_1","content":null,"encrypted_content":"opaque","summary":[{"type":"summary_text","text":"sum"}]},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{}"},
				{"type":"reasoning","id":"rs_2","content":null,"encrypted_content":"opaque","summary":[]},
				{"type":"function_call","call_id":"c2","name":"f","arguments":"{}"}]`,
			want: []Message{
				{Role: "user", Content: "q"},
				{Role: "assistant", NullContent: true, Reasoning: ptr("sum"), ToolCalls: []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: json.RawMessage(`"{}"`)}}},
				{Role: "assistant", NullContent: true, ToolCalls: []ToolCall{{ID: "c2", Type: "function", Name: "f", Arguments: json.RawMessage(`"{}"`)}}},
			},
		},
		{
			name: "orphan reasoning dropped, refusal kept",
			input: `[{"type":"reasoning","content":[{"type":"reasoning_text","text":"lost"}]},
				{"role":"user","content":"q"},
				{"role":"assistant","content":[{"type":"refusal","refusal":"no"}]}]`,
			want: []Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: "no"}},
		},
		{
			name:  "tools: function, namespace, skipped",
			input: `[{"role":"user","content":"q"}]`,
			tools: `[{"type":"function","name":"f","description":"d","parameters":{"type":"object","properties":{"x":{"type":"number","default":0.0}}},"strict":true},
				{"type":"web_search"},
				{"type":"namespace","name":"mcp__fs","description":"fs","tools":[{"type":"function","name":"read","parameters":{"type":"object"}},{"type":"custom","name":"x"}]},
				{"type":"function","name":"bare"}]`,
			want: []Message{{Role: "user", Content: "q"}},
			wantTools: []Tool{
				{Name: "f", Description: ptr("d"), Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"number","default":0.0}}}`)},
				{Name: "read", Parameters: json.RawMessage(`{"type":"object"}`)},
				{Name: "bare"},
			},
			wantSkipped: []string{"web_search", "custom"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := ResponsesInput{Instructions: tt.instructions, Items: items(t, tt.input)}
			if tt.tools != "" {
				in.Tools = json.RawMessage(tt.tools)
			}
			got, err := FromResponses(in)
			if err != nil {
				t.Fatalf("FromResponses: %v", err)
			}
			if diff := cmp.Diff(tt.want, got.Messages); diff != "" {
				t.Errorf("messages (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantTools, got.Tools); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantSkipped, got.SkippedTools); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromResponsesErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		input     string
		tools     string
		wantParam string
		wantErr   error
	}{
		{"image part", `[{"role":"user","content":"a"},{"role":"user","content":[{"type":"input_text","text":"a"},{"type":"input_image","image_url":"x"}]}]`, "", "input[1].content[1].type", ErrUnsupported},
		{"unknown part", `[{"role":"user","content":[{"type":"bogus"}]}]`, "", "input[0].content[0].type", ErrInvalidInput},
		{"unknown item", `[{"type":"wat"}]`, "", "input[0].type", ErrInvalidInput},
		{"unknown role", `[{"role":"tool","content":"x"}]`, "", "input[0].role", ErrInvalidInput},
		{"item reference", `[{"type":"item_reference","id":"msg_1"}]`, "", "input[0].type", ErrUnsupported},
		{"call without name", `[{"type":"function_call","call_id":"c"}]`, "", "input[0].name", ErrInvalidInput},
		{"output object", `[{"type":"function_call_output","call_id":"c","output":{}}]`, "", "input[0].output", ErrInvalidInput},
		{"not an object", `[[1]]`, "", "input[0]", ErrInvalidInput},
		{"text not string", `[{"role":"user","content":[{"type":"input_text","text":5}]}]`, "", "input[0].content[0].text", ErrInvalidInput},
		{"tool without name", `[]`, `[{"type":"function"}]`, "tools[0].name", ErrInvalidInput},
		{"tools not array", `[]`, `{}`, "tools", ErrInvalidInput},
		{"namespace function bad", `[]`, `[{"type":"namespace","tools":[{"type":"function","name":1}]}]`, "tools[0].tools[0].name", ErrInvalidInput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			in := ResponsesInput{Items: items(t, tt.input)}
			if tt.tools != "" {
				in.Tools = json.RawMessage(tt.tools)
			}
			_, err := FromResponses(in)
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("FromResponses error = %v, want *InputError", err)
			}
			if ie.Param != tt.wantParam || !errors.Is(err, tt.wantErr) {
				t.Errorf("FromResponses error param %q (%v), want %q (%v)", ie.Param, err, tt.wantParam, tt.wantErr)
			}
		})
	}
}

func TestTemplateArguments(t *testing.T) {
	t.Parallel()
	tests := []struct{ raw, want string }{
		{`"{\"a\": 1.0}"`, `{"a": 1.0}`},
		{`""`, `{}`},
		{`"  "`, `{}`},
		{`"{bad"`, `{}`},
		{`"null"`, `null`},
		{`"[1,2]"`, `[1,2]`},
		{`{"a":1E7}`, `{"a":1E7}`},
		{`[1]`, `[1]`},
		{`null`, `{}`},
		{``, `{}`},
		{`5`, `{}`},
		{`true`, `{}`},
	}
	for _, tt := range tests {
		if got := string(templateArguments(json.RawMessage(tt.raw))); got != tt.want {
			t.Errorf("templateArguments(%s) = %s, want %s", tt.raw, got, tt.want)
		}
	}
}

func TestAppendJSONString(t *testing.T) {
	t.Parallel()
	in := "a\"\\\n\r\t\x00\x1f\x7f\u2028é\xff<>&"
	got := quoteJSON(in)
	var back string
	if err := json.Unmarshal([]byte(got), &back); err != nil {
		t.Fatalf("quoteJSON(%q) = %s: not JSON: %v", in, got, err)
	}
	if want := strings.ReplaceAll(in, "\xff", "\ufffd"); back != want {
		t.Errorf("quoteJSON round trip = %q, want %q", back, want)
	}
}

func FuzzResponsesToMessages(f *testing.F) {
	for _, s := range []string{
		`[{"role":"user","content":"hi"}]`,
		`[{"type":"reasoning","content":null,"summary":[{"type":"summary_text","text":"s"}]},{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}]`,
		`[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"o"}]}]`,
		`[{"role":"user","content":[{"type":"input_image"}]}]`,
		`[1, "x", null, {"type": 5}]`,
	} {
		f.Add([]byte(s), []byte(`[{"type":"function","name":"f"},{"type":"namespace","tools":[]}]`), "instr")
	}
	f.Fuzz(func(t *testing.T, input, tools []byte, instructions string) {
		var raw []json.RawMessage
		if json.Unmarshal(input, &raw) != nil {
			raw = []json.RawMessage{input}
		}
		conv, err := FromResponses(ResponsesInput{Instructions: instructions, Items: raw, Tools: tools})
		if err != nil {
			var ie *InputError
			if !errors.As(err, &ie) {
				t.Fatalf("error %v is not an *InputError", err)
			}
			return
		}
		// Whatever came through must become template values.
		if _, err := messageValues(conv.Messages, ContentString, nil); err != nil {
			t.Fatalf("messageValues: %v", err)
		}
		if b := appendToolsJSON(nil, conv.Tools); !json.Valid(b) {
			t.Fatalf("tools JSON invalid: %s", b)
		}
	})
}
