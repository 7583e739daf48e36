package render

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestRenderTextMemoRandomConversations is the exactness proof of the continuation path's
// template work (issue 20: shared output memory, bulk replay, the guarded last-query scan and its
// per-message cache): random Qwen3 conversations of tool rounds, user nudges, reasoning on and
// off, continued from the latest turn's memo, retried, branched from an older turn's memo, with an
// earlier message edited or replaced by an equal copy, tools changed and chat_template_kwargs
// flipped. Every render equals RenderText, and no text handed out ever changes.
func TestRenderTextMemoRandomConversations(t *testing.T) {
	m := qwen3(t)
	rng := rand.New(rand.NewPCG(20, 11))
	tools := []Tool{{Name: "ls", Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)}}
	words := []string{"alpha", "beta", "<tool_response>", "</tool_response>", "<think>", "</think>", "x", "\n", "  ", "{\"k\": 1}"}
	text := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	round := func(msgs []Message, step int) []Message {
		id := fmt.Sprintf("call_%d", step)
		a := Message{Role: "assistant", Content: text()}
		if rng.IntN(2) == 0 {
			r := text()
			a.Reasoning = &r
		}
		if rng.IntN(3) != 0 {
			a.ToolCalls = []ToolCall{{ID: id, Type: "function", Name: "ls", Arguments: []byte(fmt.Sprintf(`{"dir": %q}`, text()))}}
		}
		msgs = append(msgs, a)
		if len(a.ToolCalls) > 0 {
			for range 1 + rng.IntN(2) {
				msgs = append(msgs, Message{Role: "tool", Content: text(), ToolCallID: &id})
			}
		}
		switch rng.IntN(4) {
		case 0, 1:
			msgs = append(msgs, Message{Role: "user", Content: text()})
		case 2:
			msgs = append(msgs, Message{Role: "user", Content: "<tool_response>" + text() + "</tool_response>"})
		}
		return msgs
	}
	type turn struct {
		req  ChatRequest
		memo *RenderMemo
	}
	for conv := range 12 {
		first := ChatRequest{Messages: []Message{{Role: "system", Content: "sys"}, {Role: "user", Content: text()}}, AddGenerationPrompt: true}
		if conv%2 == 1 {
			first.ChatTemplateKwargs = json.RawMessage(`{"enable_thinking": false}`)
		}
		if conv%3 == 0 {
			first.Tools = tools
		}
		turns := []turn{{req: first}}
		var texts, copies []string
		for step := range 60 {
			from := turns[len(turns)-1]
			if rng.IntN(5) == 0 {
				from = turns[rng.IntN(len(turns))] // a branch from an older turn
			}
			req := from.req
			msgs := append([]Message(nil), req.Messages...)
			switch op := rng.IntN(10); {
			case op < 6:
				msgs = round(msgs, step)
			case op == 6 && len(msgs) > 2: // an earlier message edited
				i := 1 + rng.IntN(len(msgs)-1)
				msgs[i].Content = text()
			case op == 7 && len(msgs) > 2: // an equal copy (strings not shared)
				i := 1 + rng.IntN(len(msgs)-1)
				msgs[i].Content = strings.Clone(msgs[i].Content + "")
			case op == 8: // tools or kwargs change
				if req.Tools == nil {
					req.Tools = tools
				} else {
					req.Tools = nil
				}
				if rng.IntN(2) == 0 {
					req.ChatTemplateKwargs = json.RawMessage(`{"enable_thinking": true}`)
				}
			}
			// case 9 (and the fallthroughs): the same turn prepared again.
			req.Messages = msgs
			want, wantErr := m.RenderText(req)
			got, memo, err := m.RenderTextMemo(req, from.memo)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("conversation %d step %d: error %v, plain %v", conv, step, err, wantErr)
			}
			if err != nil {
				continue
			}
			if got != want {
				t.Fatalf("conversation %d step %d: memo render differs%s", conv, step, firstDifference(got, want))
			}
			turns = append(turns, turn{req: req, memo: memo})
			texts, copies = append(texts, got), append(copies, strings.Clone(got))
		}
		for i := range texts {
			if texts[i] != copies[i] {
				t.Fatalf("conversation %d: text %d changed after later renders", conv, i)
			}
		}
	}
}
