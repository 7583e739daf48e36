package sim_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
)

// chatModel loads the Qwen3 model with its chat template, skipping the test while the template
// engine cannot render it.
func chatModel(t *testing.T) *render.Renderer {
	t.Helper()
	m, err := loadChatModel()
	if err != nil {
		t.Skipf("chat template unavailable: %v", err)
	}
	if _, err := m.RenderText(render.ChatRequest{Messages: []render.Message{{Role: "user", Content: "hi"}}, AddGenerationPrompt: true}); err != nil {
		t.Skipf("chat template cannot render yet: %v", err)
	}
	return m
}

var loadChatModel = sync.OnceValues(func() (*render.Renderer, error) {
	return render.LoadModel(os.DirFS(qwenDir), render.Options{})
})

const chatBody = `{"model":"qwen3","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"What is the weather in Paris?"}],` +
	`"tools":[{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}],` +
	`"chat_template_kwargs":{"enable_thinking":false}`

func TestTokenizeChatEqualsRender(t *testing.T) {
	t.Parallel()
	m := chatModel(t)
	_, ts := newTestServer(t, sim.Options{Renderer: sim.ModelRenderer(m)})
	req, err := sim.ChatRequestFromBody([]byte(chatBody + `}`))
	if err != nil {
		t.Fatal(err)
	}
	_, want, err := m.Render(req)
	if err != nil {
		t.Fatal(err)
	}
	status, out := post(t, ts.URL+"/tokenize", chatBody+`}`)
	var got struct {
		Count  int      `json:"count"`
		Tokens []uint32 `json:"tokens"`
	}
	if err := json.Unmarshal(out, &got); err != nil || status != 200 {
		t.Fatalf("tokenize = %d %s (%v)", status, out, err)
	}
	if !slices.Equal(got.Tokens, want) || got.Count != len(want) {
		t.Errorf("chat /tokenize differs from render: got %d tokens, want %d", len(got.Tokens), len(want))
	}
}

func TestChatCompletions(t *testing.T) {
	t.Parallel()
	m := chatModel(t)
	_, ts := newTestServer(t, sim.Options{Renderer: sim.ModelRenderer(m)})
	status, out := post(t, ts.URL+"/v1/chat/completions", chatBody+`,"return_token_ids":true,"seed":1}`)
	var resp struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string   `json:"finish_reason"`
			TokenIDs     []uint32 `json:"token_ids"`
		} `json:"choices"`
		PromptTokenIDs []uint32 `json:"prompt_token_ids"`
	}
	if err := json.Unmarshal(out, &resp); err != nil || status != 200 {
		t.Fatalf("chat = %d %s (%v)", status, out, err)
	}
	c := resp.Choices[0]
	if resp.Object != "chat.completion" || c.Message.Role != "assistant" || !strings.Contains(c.Message.Content, `"name": "get_weather"`) ||
		c.FinishReason != "stop" || len(resp.PromptTokenIDs) == 0 {
		t.Errorf("chat response %s", out)
	}
	// Stream: the deltas add up to the same content and ids.
	raw := chatBody + `,"return_token_ids":true,"seed":1,"stream":true,"stream_options":{"include_usage":true}}`
	status, out = post(t, ts.URL+"/v1/chat/completions", raw)
	var content string
	var idsSeen []uint32
	events := readSSE(t, strings.NewReader(string(out)))
	for _, e := range events[:len(events)-1] {
		var ch struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
				TokenIDs []uint32 `json:"token_ids"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(e), &ch); err != nil {
			t.Fatalf("chunk %s: %v", e, err)
		}
		for _, c := range ch.Choices {
			content += c.Delta.Content
			idsSeen = append(idsSeen, c.TokenIDs...)
		}
	}
	if status != 200 || events[len(events)-1] != "[DONE]" || content != c.Message.Content || !slices.Equal(idsSeen, c.TokenIDs) {
		t.Errorf("stream content %q ids %d, want %q ids %d", content, len(idsSeen), c.Message.Content, len(c.TokenIDs))
	}
}
