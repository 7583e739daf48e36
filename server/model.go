package server

import (
	"context"
	"encoding/json"

	"github.com/stitchllm/stitch/family"

	"github.com/stitchllm/stitch/stream"
)

// Model is the runtime of one served model: how its prompts are prepared and its output parsed.
type Model struct {
	// Name is the served model name (request "model", vLLM's --served-model-name).
	Name string
	// Preparer builds prompt ids for a conversation.
	Preparer Preparer
	// Family is the model family: output parser, stop ids, forced tool calls (package family).
	Family family.Family
	// NewDecoder returns a fresh incremental token decoder for one stream.
	NewDecoder func() stream.TokenDecoder
	// MaxModelLen is the context length (prompt + output).
	MaxModelLen int
	// ChatTemplateKwargs are the profile's defaults (a JSON object, key order kept), or nil.
	ChatTemplateKwargs json.RawMessage
	// CacheSalt returns vLLM's cache_salt for a tenant ("" sends none).
	CacheSalt func(tenant string) string
	// Encode tokenizes text (add_special_tokens=false).
	Encode func(text string) []uint32
}

// Preparer turns a conversation into the prompt ids sent to vLLM. The full-render preparer renders
// the chat template and tokenizes everything; the artifact preparer reuses earlier ids and tokenizes
// only the new suffix, producing the same ids.
type Preparer interface {
	Prepare(ctx context.Context, in *PrepareInput) (*Prepared, error)
}

// PrepareInput is one turn's conversation.
type PrepareInput struct {
	Tenant string
	// PreviousID is the response this turn continues ("" for none); its artifact may be reused.
	PreviousID string
	// Instructions are this request's (never inherited).
	Instructions string
	// Items are the whole conversation: earlier items then this request's input.
	Items []json.RawMessage
	// ItemParam names Items[i] for error messages (earlier items are not the client's input).
	ItemParam func(i int) string
	// Tools is the Responses tools array (nil: none).
	Tools json.RawMessage
	// Kwargs is the chat_template_kwargs object for this turn.
	Kwargs json.RawMessage
}

// Prepared is a turn's prompt.
type Prepared struct {
	IDs []uint32
	// PromptPrefix, when set, is the JSON encoding of IDs[:PromptPrefixIDs] for the upstream
	// request (each id followed by a comma), kept from the previous turn.
	PromptPrefix    []byte
	PromptPrefixIDs int
	// Text is the rendered prompt text (empty when the preparer did not need it).
	Text string
	// Outcome is the artifact resolution ("disabled", "miss", "hit_local", …; "new" without a previous response).
	Outcome string
	// ThinkingOpen reports that the prompt ends inside an opened <think> block.
	ThinkingOpen bool
	// Reused counts leading ids taken from an artifact rather than tokenized now.
	Reused int
	// ExactSuffix is, in exact mode, the ids tokenized this turn (the checkpoint keeps them so a lost
	// artifact can be rebuilt). For a new conversation it is the whole prompt.
	ExactSuffix []uint32
	// SkippedTools names tools not shown to the model (web_search, …), for the log.
	SkippedTools []string
	// Fingerprint is the turn's model execution identity (zero when the preparer keeps no
	// artifacts); the checkpoint records it so an exact-mode rebuild can tell a changed identity.
	Fingerprint [32]byte
	// Artifact carries preparer state needed to write the next artifact (opaque to the server).
	Artifact any
}
