package render

import (
	"fmt"
	"testing"
)

// benchRequest is a 20-message conversation with 3 tools, tool calls and reasoning.
func benchRequest(b *testing.B) ChatRequest {
	b.Helper()
	tools, err := ParseChatTools([]byte(`[
	{"type":"function","function":{"name":"get_weather","description":"Get the weather for a city.","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"]}}},
	{"type":"function","function":{"name":"search","description":"Search the web.","parameters":{"type":"object","properties":{"q":{"type":"string"},"k":{"type":"integer","default":5}},"required":["q"]}}},
	{"type":"function","function":{"name":"read_file","description":"Read a file.","parameters":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}}}]`))
	if err != nil {
		b.Fatal(err)
	}
	msgs := []Message{{Role: "system", Content: "You are a helpful assistant. Answer briefly and use tools when needed."}}
	for i := 0; len(msgs) < 20; i++ {
		msgs = append(msgs, Message{Role: "user", Content: fmt.Sprintf("Question %d: what is the weather in city number %d, and why?", i, i)})
		r := fmt.Sprintf("The user asks about city %d; I should call the tool.", i)
		id := fmt.Sprintf("call_%d", i)
		msgs = append(msgs,
			Message{Role: "assistant", Reasoning: &r, ToolCalls: []ToolCall{{ID: id, Type: "function", Name: "get_weather",
				Arguments: []byte(fmt.Sprintf(`"{\"city\": \"City %d\", \"unit\": \"c\"}"`, i))}}},
			Message{Role: "tool", ToolCallID: &id, Content: fmt.Sprintf(`{"temp": %d.5, "sky": "clear"}`, i)},
			Message{Role: "assistant", Content: fmt.Sprintf("It is %d.5 degrees and clear in City %d.", i, i)})
	}
	return ChatRequest{Messages: msgs[:20], Tools: tools, AddGenerationPrompt: true,
		ChatTemplateKwargs: []byte(`{"enable_thinking": true}`)}
}

func BenchmarkRender20Messages3Tools(b *testing.B) {
	m := qwen3(b)
	req := benchRequest(b)
	text, err := m.RenderText(req)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("text", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, err := m.RenderText(req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("text+ids", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(text)))
		for b.Loop() {
			if _, _, err := m.Render(req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkExtend(b *testing.B) {
	m := qwen3(b)
	cases := loadGolden(b, "qwen3")
	long := cases[0]
	for _, c := range cases {
		if len(c.text) > len(long.text) {
			long = c
		}
	}
	// The previous turn is the prompt minus its last 10%, cut at an added-token boundary.
	full := m.EncodeWithBoundaries(long.text)
	cut := full.Boundaries[len(full.Boundaries)*9/10].Offset
	prev := m.EncodeWithBoundaries(long.text[:cut])
	b.Run(fmt.Sprintf("full_%dB", len(long.text)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(long.text)))
		for b.Loop() {
			m.EncodeWithBoundaries(long.text)
		}
	})
	b.Run(fmt.Sprintf("extend_%dB", len(long.text)), func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(long.text)))
		for b.Loop() {
			m.Extend(prev, long.text)
		}
	})
}
