package render

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderTextMemoMistralNemo is TestRenderTextMemoRandomConversations for Mistral Nemo's
// template, whose work the filter-chain memo (jinja/filtermemo.go) cuts: it filters the message
// list three times per render, raises when roles do not alternate, puts the tools block before
// the last user message (so it moves with each new one) and the system message into the last
// message when that is a user message. Conversations of tool rounds and user turns grow, are
// prepared again, branch from an older turn's memo, have an earlier message edited, copied
// equal, or dropped (breaking the alternation), lose or regain their tools and system message.
// Every render, or error, equals RenderText's, and no text handed out ever changes.
func TestRenderTextMemoMistralNemo(t *testing.T) {
	ct, err := LoadChatTemplate(os.DirFS(filepath.Join("..", "testdata", "models", "mistral_nemo")), Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := ct.m
	rng := rand.New(rand.NewPCG(32, 12))
	desc := "List a directory."
	tools := []Tool{
		{Name: "ls", Description: &desc, Parameters: json.RawMessage(`{"type":"object","properties":{"dir":{"type":"string"}}}`)},
		{Name: "cat", Parameters: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)},
	}
	words := []string{"alpha", "beta", "[INST]", "[/INST]", "[TOOL_CALLS]", "x", "\n", "  ", "{\"k\": 1}", "é"}
	text := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(12) {
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		}
		return b.String()
	}
	// round appends an assistant turn: tool calls and their results, then (mostly) an answer and
	// the next user message.
	round := func(msgs []Message, step int) []Message {
		if rng.IntN(3) != 0 {
			id := fmt.Sprintf("c%08d", step)
			msgs = append(msgs, Message{Role: "assistant", ToolCalls: []ToolCall{{ID: id, Type: "function", Name: "ls",
				Arguments: []byte(fmt.Sprintf(`{"dir": %q}`, text()))}}})
			msgs = append(msgs, Message{Role: "tool", Content: text(), ToolCallID: &id})
			if rng.IntN(2) == 0 {
				return msgs // the next turn continues the tool round
			}
		}
		msgs = append(msgs, Message{Role: "assistant", Content: text()})
		return append(msgs, Message{Role: "user", Content: text()})
	}
	type turn struct {
		req  ChatRequest
		memo *RenderMemo
	}
	errs := 0
	for conv := range 10 {
		first := ChatRequest{Messages: []Message{{Role: "user", Content: text()}}, AddGenerationPrompt: true}
		if conv%2 == 0 {
			first.Messages = append([]Message{{Role: "system", Content: "sys " + text()}}, first.Messages...)
		}
		if conv%3 != 2 {
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
			switch op := rng.IntN(12); {
			case op < 7:
				msgs = round(msgs, step)
			case op == 7 && len(msgs) > 1: // an earlier message edited
				i := rng.IntN(len(msgs) - 1)
				msgs[i].Content = text()
			case op == 8 && len(msgs) > 1: // an equal copy (strings not shared)
				i := rng.IntN(len(msgs))
				msgs[i].Content = strings.Clone(msgs[i].Content + "")
			case op == 9 && len(msgs) > 2: // a message dropped: the roles may no longer alternate
				i := 1 + rng.IntN(len(msgs)-2)
				msgs = append(msgs[:i:i], msgs[i+1:]...)
			case op == 10: // the tools block goes or comes back
				if req.Tools == nil {
					req.Tools = tools
				} else {
					req.Tools = nil
				}
			case op == 11: // the system message goes or comes back
				if msgs[0].Role == "system" {
					msgs = msgs[1:]
				} else {
					msgs = append([]Message{{Role: "system", Content: "sys"}}, msgs...)
				}
			}
			// (and the fallthroughs): the same turn prepared again.
			req.Messages = msgs
			want, wantErr := m.RenderText(req)
			got, memo, err := m.RenderTextMemo(req, from.memo)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("conversation %d step %d: error %v, plain %v", conv, step, err, wantErr)
			}
			if err != nil {
				if err.Error() != wantErr.Error() {
					t.Fatalf("conversation %d step %d: error %q, plain %q", conv, step, err, wantErr)
				}
				errs++
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
	if errs == 0 {
		t.Error("no render raised the alternation error: the test lost its error cases")
	}
}
