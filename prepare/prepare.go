// Package prepare is stitch's prompt engine: it turns one turn's conversation (Responses items,
// instructions, tools, chat_template_kwargs) into the prompt ids sent to vLLM, and after the
// response advances what the next turn reuses. It knows nothing of HTTP; package server calls it.
//
// # The contract
//
// An [Engine] prepares a turn: Prepare(ctx, in) returns a [*Prompt] whose IDs are exactly the
// ids a full render of the conversation gives (canonical mode), or the frozen history plus the
// new turn (exact mode, docs/design.md "Two continuation modes"). The caller then:
//
//  1. sends Prompt.IDs (with Prompt.PromptPrefix, the JSON of a prefix of them, when set);
//  2. stores the response's checkpoint, letting Prompt.Annotate fill the fields the engine reads
//     back on a later turn (its mode, exact mode's suffix ids, the fingerprint) and
//     Prompt.AnnotateOutput those that depend on the output (gpt-oss: the generated headers);
//  3. once the response completed or stopped incomplete, and was stored (or can be continued
//     statelessly), runs Prompt.Commit, the after-response step: the artifact engine writes the
//     token artifact and its hot entry there; a full render does nothing. Failed and cancelled
//     responses never commit, so they never advance an artifact.
//
// What the caller already knows is passed in [Input]: the previous response's checkpoint, when it
// loaded one, so nothing is read twice.
//
// Four engines implement the contract: [FullRender] (every turn rendered and tokenized whole:
// vLLM's own chat path, the baseline), [ArtifactEngine] (token artifacts, the certified
// suffix, the hot cache; falls back to a full render with the same ids on every miss),
// [HarmonyRender] (gpt-oss: Harmony messages rendered in full each turn, as vLLM's
// /v1/responses does; no chat template) and [HarmonyArtifacts] (gpt-oss with artifacts, message
// by message, and exact mode). [New] picks one from [ArtifactOptions]: the one branch
// point between the chat-template and the Harmony paths. All are safe for concurrent use; a Prompt belongs to one
// turn. A new engine is written in this package: a Prompt's after-response state is unexported,
// so only an engine can set it and no caller can forge or forget it.
//
// Model-family knowledge (whether the prompt opened reasoning, how exact mode closes a turn)
// comes from package family.
package prepare

import (
	"context"
	"encoding/json"

	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// Engine turns a conversation into the prompt ids sent to vLLM.
type Engine interface {
	// Prepare renders and tokenizes the turn (or reuses earlier ids). Errors are
	// *render.InputError for bad input (a 400 naming its param) or wrap render.ErrTemplate.
	Prepare(ctx context.Context, in *Input) (*Prompt, error)
}

// Input is one turn's conversation.
type Input struct {
	Tenant string
	// PreviousID is the response this turn continues ("" for none); its artifact may be reused.
	PreviousID string
	// Previous is PreviousID's checkpoint when the caller loaded it (nil otherwise: the engine
	// then reads it itself where it needs it). Its ConversationItemIDs are Items' leading
	// items. gpt-oss reads its ItemNotes (the generated headers of earlier outputs) from it when
	// StoredIDs name those items; without it they render as items.
	Previous *store.Checkpoint
	// Instructions are this request's (never inherited).
	Instructions string
	// EmptyInstructions reports that the request sent instructions "" (not absent or null):
	// Harmony tells them apart (absent instructions take a leading system item's text).
	EmptyInstructions bool
	// ReasoningEffort is the request's reasoning.effort ("" when absent). Harmony renders it
	// natively; chat-template families see it through Kwargs (family.Family.ReasoningSwitch).
	ReasoningEffort string
	// Items are the whole conversation: earlier items then this request's input.
	Items []json.RawMessage
	// StoredIDs are the ids Items[:len(StoredIDs)] were read under from the checkpoint store for
	// Tenant (the previous response's conversation; "" for an item not read so), which lets the
	// parsed-item cache skip comparing their bytes again (render.ResponsesInput).
	StoredIDs []string
	// ItemParam names Items[i] for error messages (earlier items are not the client's input).
	ItemParam func(i int) string
	// Tools is the Responses tools array (nil: none).
	Tools json.RawMessage
	// Kwargs is the chat_template_kwargs object for this turn.
	Kwargs json.RawMessage
}

// Outcome is how a turn's previous response was resolved (stitch_artifact_resolutions_total
// {outcome}); exactly one per turn.
type Outcome string

// The outcomes.
const (
	OutcomeNew         Outcome = "new" // no previous response: nothing to resolve
	OutcomeHitLocal    Outcome = "hit_local"
	OutcomeHitPortable Outcome = "hit_portable"
	OutcomeMiss        Outcome = "miss"
	OutcomeExpired     Outcome = "expired"
	OutcomeInvalid     Outcome = "invalid"
	OutcomeDiverged    Outcome = "diverged"
	OutcomeDisabled    Outcome = "disabled"
)

// Prompt is a prepared turn: its ids, what the caller reports about them, and the engine's
// after-response step.
type Prompt struct {
	IDs []uint32
	// PromptPrefix, when set, is the JSON encoding of IDs[:PromptPrefixIDs] for the upstream
	// request (each id followed by a comma; upstream.CompletionRequest.PromptPrefix), kept from
	// the previous turn: all of IDs when the new ids' JSON could be appended to the previous
	// turn's in place.
	PromptPrefix    []byte
	PromptPrefixIDs int
	// Text is the rendered prompt text (empty when the engine did not need it).
	Text string
	// Outcome is the artifact resolution.
	Outcome Outcome
	// ReasoningOpen reports that the prompt ends inside a reasoning block the generation prompt
	// opened (family.Family.OpensReasoning), so the output starts as reasoning.
	ReasoningOpen bool
	// Reused counts leading ids taken from an artifact rather than tokenized now.
	Reused int
	// SkippedTools names tools not shown to the model (web_search, …), for the log.
	SkippedTools []string

	// What Annotate stores in the checkpoint.
	exactSuffix []uint32 // exact mode: the ids tokenized this turn (for a new chain, the whole prompt)
	fingerprint [32]byte // zero when the engine keeps no artifacts
	// pending is what Commit writes (nil: nothing, a full render).
	pending *pendingArtifact
	engine  *ArtifactEngine
	// notes notes a gpt-oss turn's output headers (AnnotateOutput); nil for other engines.
	notes *harmonyNotes
}

// Output is the part of a finished response Commit reads: the generated ids and the token ranges
// of its output items (*stream.Converter implements it).
type Output interface {
	TokenIDs() []uint32
	Ranges() []stream.ItemRange
}

var _ Output = (*stream.Converter)(nil)

// Annotate fills the checkpoint fields the engine reads back on a later turn: the mode and, in
// exact mode, the ids tokenized this turn (so a lost artifact can be rebuilt), and the turn's
// fingerprint (so a rebuild can tell a changed identity). The caller stores them as they are.
func (p *Prompt) Annotate(cp *store.Checkpoint) {
	if p.exactSuffix != nil {
		cp.Mode, cp.PromptSuffixIDs = store.ModeExact, p.exactSuffix
	}
	cp.Fingerprint = p.fingerprint
}

// Fingerprint is the turn's model execution identity (docs/design.md "Identities"); zero when
// the engine keeps no artifacts.
func (p *Prompt) Fingerprint() [32]byte { return p.fingerprint }

// Commit is the prompt's after-response step: it advances the artifact to response responseID
// (the ids prepared plus out's generated ids), for the next turn to reuse. It runs once, only for
// a completed or incomplete response; it does nothing for a full render. Failures are logged and
// counted, never returned: losing an artifact costs CPU, never correctness.
func (p *Prompt) Commit(ctx context.Context, responseID string, out Output) {
	if p.pending == nil || p.engine == nil {
		return
	}
	p.engine.commit(ctx, responseID, p.pending, p.Reused, out)
}
