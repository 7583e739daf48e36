package render_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stitchllm/stitch/render"
)

func ExampleFromResponses() {
	items := []json.RawMessage{
		json.RawMessage(`{"role":"user","content":"Weather in Paris?"}`),
		json.RawMessage(`{"type":"reasoning","id":"rs_1","summary":[],"content":[{"type":"reasoning_text","text":"Use the tool."}]}`),
		json.RawMessage(`{"type":"function_call","call_id":"c1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"}`),
		json.RawMessage(`{"type":"function_call_output","call_id":"c1","output":"18C"}`),
	}
	conv, err := render.FromResponses(render.ResponsesInput{
		Instructions: "Be brief.",
		Items:        items,
		Tools:        json.RawMessage(`[{"type":"function","name":"get_weather","parameters":{"type":"object"}},{"type":"web_search"}]`),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, m := range conv.Messages {
		fmt.Printf("%s %q calls=%d\n", m.Role, m.Content, len(m.ToolCalls))
	}
	fmt.Println("skipped tools:", conv.SkippedTools)
	// Output:
	// system "Be brief." calls=0
	// user "Weather in Paris?" calls=0
	// assistant "" calls=1
	// tool "18C" calls=0
	// skipped tools: [web_search]
}

func ExampleRenderer_Extend() {
	m, err := render.LoadModel(os.DirFS(filepath.Join("..", "testdata", "models", "qwen3")), render.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	turn1 := []render.Message{{Role: "user", Content: "Hi!"}}
	p1, _ := m.RenderText(render.ChatRequest{Messages: turn1, AddGenerationPrompt: true})
	prev := m.EncodeWithBoundaries(p1) // kept in the token artifact

	turn2 := append(turn1, render.Message{Role: "assistant", Content: "Hello!"}, render.Message{Role: "user", Content: "Bye."})
	p2, _ := m.RenderText(render.ChatRequest{Messages: turn2, AddGenerationPrompt: true})
	next, reuse := m.Extend(prev, p2)
	full := m.Encode(p2)
	fmt.Println("reused tokens:", reuse.Tokens, "of", len(next.IDs))
	fmt.Println("equals full encode:", fmt.Sprint(next.IDs) == fmt.Sprint(full))
	// Output:
	// reused tokens: 7 of 25
	// equals full encode: true
}
