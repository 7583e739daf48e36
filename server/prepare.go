package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stream"
)

// ModelConfig describes one served model for NewModelRuntime.
type ModelConfig struct {
	Name   string
	Render *render.Model
	// Family names the model family by vLLM's parser names; zero: hermes + qwen3.
	Family             family.Names
	MaxModelLen        int
	ChatTemplateKwargs json.RawMessage
	CacheSalt          func(tenant string) string
}

// NewModelRuntime builds a model's runtime with the full-render preparer (every turn renders and
// tokenizes the whole conversation).
func NewModelRuntime(c ModelConfig) (*Model, error) {
	tok := c.Render.Tokenizer()
	names := c.Family
	if names == (family.Names{}) {
		names = family.Names{ToolCallParser: "hermes", ReasoningParser: "qwen3"}
	}
	fam, err := family.New(names, family.Vocabulary{TokenID: tok.TokenID, StopTokenIDs: c.Render.StopTokenIDs})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", c.Name, err)
	}
	return &Model{
		Name:               c.Name,
		Preparer:           FullRender{Model: c.Render, Family: fam},
		Family:             fam,
		NewDecoder:         func() stream.TokenDecoder { return tok.NewDecodeStream() },
		MaxModelLen:        c.MaxModelLen,
		ChatTemplateKwargs: c.ChatTemplateKwargs,
		CacheSalt:          c.CacheSalt,
		Encode:             c.Render.Encode,
	}, nil
}

// FullRender prepares every turn by rendering the whole conversation and tokenizing all of it:
// exactly vLLM's chat path. It is the baseline and the fallback of the artifact fast path.
type FullRender struct {
	Model  *render.Model
	Family family.Family
}

// Prepare implements Preparer.
func (f FullRender) Prepare(_ context.Context, in *PrepareInput) (*Prepared, error) {
	text, conv, err := RenderConversation(f.Model, in)
	if err != nil {
		return nil, err
	}
	skipped := conv.SkippedTools
	outcome := "disabled"
	if in.PreviousID == "" {
		outcome = "new"
	}
	return &Prepared{IDs: f.Model.Encode(text), Text: text, Outcome: outcome, SkippedTools: skipped, ThinkingOpen: f.Family.OpensReasoning(text)}, nil
}

// RenderConversation maps the Responses conversation to chat messages and renders the chat
// template with the generation prompt. It returns the prompt text and the chat conversation.
func RenderConversation(m *render.Model, in *PrepareInput) (string, *render.Conversation, error) {
	conv, err := conversation(in, nil)
	if err != nil {
		return "", nil, err
	}
	text, err := m.RenderText(chatRequest(in, conv))
	if err != nil {
		return "", nil, fmt.Errorf("render chat template: %w", err)
	}
	return text, conv, nil
}

// conversation maps a turn's Responses items to chat messages, with items parsed before taken
// from cache (nil: none).
func conversation(in *PrepareInput, cache *render.ItemCache) (*render.Conversation, error) {
	return render.FromResponses(render.ResponsesInput{
		Instructions: in.Instructions, Items: in.Items, ItemParam: in.ItemParam, Tools: in.Tools, Cache: cache,
	})
}

// chatRequest is the render of a turn's conversation: the generation prompt added, the turn's
// chat_template_kwargs applied.
func chatRequest(in *PrepareInput, conv *render.Conversation) render.ChatRequest {
	return render.ChatRequest{Messages: conv.Messages, Tools: conv.Tools, AddGenerationPrompt: true, ChatTemplateKwargs: in.Kwargs}
}
