package prepare

import (
	"context"
	"fmt"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
)

// FullRender prepares every turn by rendering the whole conversation and tokenizing all of it:
// exactly vLLM's chat path. It is the baseline and the fallback of the artifact fast path.
type FullRender struct {
	// Model renders and tokenizes; Family tells whether the prompt opened reasoning.
	Model  *render.Renderer
	Family family.Family
}

var _ Engine = FullRender{}

// Prepare implements Engine.
func (f FullRender) Prepare(_ context.Context, in *Input) (*Prompt, error) {
	text, conv, err := RenderConversation(f.Model, in)
	if err != nil {
		return nil, err
	}
	skipped := conv.SkippedTools
	outcome := OutcomeDisabled
	if in.PreviousID == "" {
		outcome = OutcomeNew
	}
	return &Prompt{IDs: f.Model.Encode(text), Text: text, Outcome: outcome, SkippedTools: skipped, ReasoningOpen: f.Family.OpensReasoning(text)}, nil
}

// RenderConversation maps the Responses conversation to chat messages and renders the chat
// template with the generation prompt. It returns the prompt text and the chat conversation.
func RenderConversation(m *render.Renderer, in *Input) (string, *render.Conversation, error) {
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
func conversation(in *Input, cache *render.ItemCache) (*render.Conversation, error) {
	return resumeConversation(in, cache, nil, false)
}

// resumeConversation is conversation resuming from an earlier turn's prefix where it fits
// (render.ResponsesInput.Resume), and keeping this turn's when keep is set.
func resumeConversation(in *Input, cache *render.ItemCache, resume *render.ItemsPrefix, keep bool) (*render.Conversation, error) {
	return render.FromResponses(render.ResponsesInput{
		Instructions: in.Instructions, Items: in.Items, ItemParam: in.ItemParam, Tools: in.Tools, Cache: cache,
		Tenant: in.Tenant, StoredIDs: in.StoredIDs, Resume: resume, KeepPrefix: keep,
	})
}

// chatRequest is the render of a turn's conversation: the generation prompt added, the turn's
// chat_template_kwargs applied.
func chatRequest(in *Input, conv *render.Conversation) render.ChatRequest {
	return render.ChatRequest{Messages: conv.Messages, Tools: conv.Tools, AddGenerationPrompt: true, ChatTemplateKwargs: in.Kwargs, Tenant: in.Tenant}
}

// New returns the engine opts describe. For gpt-oss (opts.Harmony set): [HarmonyArtifacts] when
// opts.Store is set, else [HarmonyRender]. Otherwise: an [ArtifactEngine] when opts.Store is set
// (it then needs opts.Metrics too), else [FullRender] of opts.Model and opts.Family.
func New(opts ArtifactOptions) Engine {
	if opts.Harmony != nil {
		if opts.Store == nil {
			return NewHarmonyRender(*opts.Harmony)
		}
		return NewHarmonyArtifacts(opts)
	}
	if opts.Store == nil {
		return FullRender{Model: opts.Model, Family: opts.Family}
	}
	return NewArtifactEngine(opts)
}
