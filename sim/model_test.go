package sim_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stitchllm/stitch/sim"
)

const (
	weatherTool = `{"type": "function", "function": {"name": "get_weather", "description": "Weather", "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}, "days": {"type": "integer", "minimum": 1, "maximum": 5}, "hourly": {"type": "boolean"}, "tags": {"type": "array", "items": {"type": "string"}}, "where": {"type": "object", "properties": {"lat": {"type": "number"}}}}, "required": ["city"]}}}`
	searchTool  = `{"type": "function", "function": {"name": "search", "description": "Search", "parameters": {"type": "object", "properties": {"query": {"type": "string"}}}}}`
	imEndID     = 151645
	eotID       = 151643
)

// answerOf returns the full non-stream answer (text with special tokens skipped, ids) to prompt.
func answerOf(t *testing.T, base, prompt string) (string, []uint32) {
	t.Helper()
	c := complete(t, base, map[string]any{"prompt": ids(t, prompt), "max_tokens": 4000, "return_token_ids": true})
	if c.Choices[0].FinishReason != "stop" {
		t.Fatalf("finish %q for prompt %q", c.Choices[0].FinishReason, prompt)
	}
	return c.Choices[0].Text, c.Choices[0].TokenIDs
}

func TestScriptedToolCall(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{})
	tests := []struct {
		name, user, want string
		thinking         bool
	}{
		{"names second tool", "Please search for the weather in Paris", "search", false},
		{"names first tool", "Use get_weather for Berlin and Rome.", "get_weather", true},
		{"names none: first tool", "What should I wear in Oslo?", "get_weather", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, out := answerOf(t, ts.URL, qwenChat([]string{weatherTool, searchTool}, tt.thinking, [2]string{"user", tt.user}))
			if out[len(out)-1] != imEndID {
				t.Errorf("answer does not end with <|im_end|>: %v", out[len(out)-1:])
			}
			if tt.thinking != strings.HasPrefix(text, "<think>\n") {
				t.Errorf("thinking %v but answer %q", tt.thinking, text)
			}
			_, call, ok := strings.Cut(text, "<tool_call>\n")
			call, rest, ok2 := strings.Cut(call, "\n</tool_call>")
			if !ok || !ok2 || rest != "" {
				t.Fatalf("no tool call block at the end of %q", text)
			}
			var got struct {
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments"`
			}
			if err := json.Unmarshal([]byte(call), &got); err != nil {
				t.Fatalf("tool call %q: %v", call, err)
			}
			if got.Name != tt.want {
				t.Errorf("called %q, want %q", got.Name, tt.want)
			}
			if !strings.HasPrefix(call, `{"name": "`+tt.want+`", "arguments": {`) {
				t.Errorf("call %q is not in Qwen3's json.dumps layout", call)
			}
			if tt.want == "get_weather" && !strings.Contains(string(got.Arguments), `"unit": "celsius", "days": `) {
				t.Errorf("arguments %s do not follow the schema order / enum", got.Arguments)
			}
		})
	}
}

func TestScriptedAnswers(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{OutputLen: 64})
	t.Run("tool result is quoted", func(t *testing.T) {
		p := qwenChat([]string{weatherTool}, false, [2]string{"user", "Weather in Paris?"},
			[2]string{"assistant", "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"},
			[2]string{"tool", `{"temperature": 21, "sky": "clear ☀"}`})
		text, _ := answerOf(t, ts.URL, p)
		if text != `The tool returned: "{"temperature": 21, "sky": "clear ☀"}".` {
			t.Errorf("answer %q", text)
		}
	})
	t.Run("plain text length", func(t *testing.T) {
		var lens []int
		for _, q := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
			text, out := answerOf(t, ts.URL, qwenChat(nil, false, [2]string{"user", q}))
			if strings.Contains(text, "<think>") || strings.Contains(text, "<tool_call>") {
				t.Errorf("plain answer %q", text)
			}
			if !slices.Equal(testTokenizer(t).Encode(text), out[:len(out)-1]) {
				t.Errorf("answer %q is not canonically tokenized", text)
			}
			lens = append(lens, len(out)-1)
		}
		for _, n := range lens {
			if n < 32 || n > 100 {
				t.Errorf("answer lengths %v: want about [32, 96] tokens", lens)
				break
			}
		}
	})
	t.Run("open think block is closed", func(t *testing.T) {
		text, _ := answerOf(t, ts.URL, qwenChat(nil, true, [2]string{"user", "hi"})+"<think>\n")
		if strings.Contains(text, "<think>") || strings.Count(text, "</think>\n\n") != 1 {
			t.Errorf("answer %q", text)
		}
	})
	t.Run("raw prompt ends with endoftext", func(t *testing.T) {
		_, out := answerOf(t, ts.URL, "The history of Rome")
		if out[len(out)-1] != eotID {
			t.Errorf("raw answer ends with %d", out[len(out)-1])
		}
	})
}

// TestFallbackDecoder runs a multi-byte answer through the byte tokenizer, whose ids split UTF-8
// characters: streamed text must still equal the non-stream text.
func TestFallbackDecoder(t *testing.T) {
	t.Parallel()
	_, ts := newTestServer(t, sim.Options{Tokenizer: byteTokenizer})
	p := byteTokenizer.Encode(qwenChat(nil, false, [2]string{"user", "x"}, [2]string{"tool", "Grüße, 世界 🌍 ok"}))
	body := func() map[string]any { return map[string]any{"prompt": p, "max_tokens": 500, "return_token_ids": true} }
	full := complete(t, ts.URL, body()).Choices[0]
	st := collect(t, streamCompletion(t, ts.URL, body()))
	if full.Text != st.text || !strings.Contains(full.Text, "Grüße, 世界 🌍 ok") {
		t.Errorf("stream %q, non-stream %q", st.text, full.Text)
	}
}
