package prepare

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/store"
)

// Exact mode (docs/design.md "Two continuation modes"): the history is frozen as the previous prompt ids
// plus the generated ids verbatim; only the new turn is rendered and tokenized. The new turn is the
// full render's text after the <|im_end|> that closes the previous response's assistant turn: if the
// frozen history closes n assistant/user/system blocks, it starts after the n-th <|im_end|> of the
// full render. That split point is the end of an added token, so the suffix tokenizes independently.
//
// The checkpoint keeps each turn's generated ids and suffix ids, so a lost artifact is rebuilt as
// suffix(R0) ++ G(R0) ++ suffix(R1) ++ G(R1) ++ … — the identical sequence.

// prepareExact builds the exact-mode prompt for a continuation. prev is the previous response's
// artifact when resolve found a usable one.
// With hot (the previous turn's in-process state, whose artifact prev is), the previous
// conversation is rendered from its memo and the request reuses the previous prompt's JSON.
func (a *ArtifactEngine) prepareExact(ctx context.Context, in *Input, p *Prompt, prev *store.Artifact, hot *hotEntry) (*Prompt, error) {
	pending := p.pending
	var history []uint32
	if prev != nil {
		history = a.closeTurn(append(append(make([]uint32, 0, len(prev.PromptIDs)+len(prev.GeneratedIDs)+1), prev.PromptIDs...), prev.GeneratedIDs...))
	} else {
		rebuilt, err := a.rebuildExact(ctx, in, pending.fingerprint)
		if err != nil {
			// No way to recover the frozen history (e.g. a response made before exact mode was on):
			// the canonical full render is the only sequence left.
			a.opts.Logger.Warn("exact history unavailable; full render", "previous_response_id", in.PreviousID, "err", err)
			pending.enc = a.opts.Model.EncodeWithBoundaries(pending.text)
			p.IDs, p.exactSuffix = pending.enc.IDs, pending.enc.IDs
			return p, nil
		}
		history = rebuilt
	}
	start, ok := a.newTurnStart(ctx, in, history, pending.text, hot)
	if !ok {
		p.Outcome = OutcomeDiverged
		pending.enc = a.opts.Model.EncodeWithBoundaries(pending.text)
		p.IDs, p.exactSuffix = pending.enc.IDs, pending.enc.IDs
		return p, nil
	}
	suffix := a.opts.Model.EncodeTail(pending.text[start:]) // start > 0: just after an end-of-turn token
	ids := append(history, suffix...)
	pending.enc = render.Encoding{IDs: ids}
	pending.exactSuffix = suffix
	p.IDs, p.Reused, p.exactSuffix = ids, len(history), suffix
	if hot != nil && prev == hot.art && len(prev.PromptIDs) > 0 {
		// The history starts with the previous prompt, whose JSON the hot entry holds.
		p.reuseJSON(hot, len(hot.promptJSON), nil, len(prev.PromptIDs))
	}
	return p, nil
}

// closeTurn appends the template's end-of-turn token when the generation did not end with it
// (a max_tokens cut, or another stop id), as the template closes every assistant turn.
func (a *ArtifactEngine) closeTurn(ids []uint32) []uint32 { return a.opts.Family.CloseTurn(ids) }

func (a *ArtifactEngine) endOfTurn() uint32 { return a.opts.Family.EndOfTurn() }

// newTurnStart returns the byte offset of text just after the end-of-turn token that closes the
// previous response: after its n-th end-of-turn token, n being the number of end-of-turn tokens in
// the previous conversation as the template renders it (its items, per its checkpoint). Counting
// them in the frozen ids instead goes wrong when the rendered history holds an end-of-turn token
// the model generated as plain text ("<|im_end|>" inside tool-call arguments, re-serialized by
// the message preprocessing, or spelled in ordinary pieces), or when changed instructions or tools
// add or remove a system block: the new turn then repeated part of the history or lost the new
// input. Without the checkpoint it falls back to counting the frozen ids. The new turn must close
// at least one end-of-turn token (its input), else there is no safe split.
func (a *ArtifactEngine) newTurnStart(ctx context.Context, in *Input, history []uint32, text string, hot *hotEntry) (int, bool) {
	if ro, ok := a.opts.Family.(family.RoleOpened); ok && len(ro.RoleTokens()) > 0 {
		return a.nextRoleStart(ctx, in, history, text, hot, ro.RoleTokens())
	}
	end := a.endOfTurn()
	isEnd := func(id uint32) bool { return id == end }
	n := a.countPrevious(ctx, in, hot, isEnd)
	if n < 0 {
		n = 0
		for _, id := range history {
			if id == end {
				n++
			}
		}
	}
	if n == 0 {
		return 0, false
	}
	start, closes := -1, false
	for _, sp := range a.opts.Model.Tokenizer().AddedTokenSpans(text) {
		if sp.ID != end {
			continue
		}
		n--
		if n == 0 {
			start = sp.End
		} else if n < 0 {
			closes = true
			break
		}
	}
	if iu, ok := a.opts.Family.(family.InputsUnclosed); ok && iu.OnlyAssistantClosed() {
		// The new input closes no end-of-turn token (Mistral, DeepSeek): it must still be there.
		closes = start >= 0 && strings.TrimSpace(text[start:]) != ""
	}
	return start, start >= 0 && closes
}

// countPrevious returns how many added tokens match in the previous response's conversation as
// the template renders it (its items, per its checkpoint, with the generation prompt), or -1 when
// that conversation cannot be rendered.
func (a *ArtifactEngine) countPrevious(ctx context.Context, in *Input, hot *hotEntry, match func(uint32) bool) int {
	cp, err := a.previous(ctx, in)
	if err != nil {
		return -1
	}
	k := len(cp.ConversationItemIDs)
	if k == 0 || k >= len(in.Items) {
		return -1
	}
	prev := *in
	prev.Items = in.Items[:k]
	prevText, err := a.renderPrevious(&prev, hot)
	if err != nil {
		return -1
	}
	n := 0
	for _, sp := range a.opts.Model.Tokenizer().AddedTokenSpans(prevText) {
		if match(sp.ID) {
			n++
		}
	}
	return n
}

// nextRoleStart is newTurnStart for a template that writes no token after an assistant message
// (family.RoleOpened, GLM): the previous conversation rendered with its generation prompt holds n
// role tokens, the last one the generation prompt's; in the new full render the n-th role token
// is the one that opens the message after the previous answer. The new turn starts after it when
// the model stopped at that same token (the history already ends with it), else at it (a cut, or
// another stop id: the history is what the model generated, then the re-render's text). The new
// turn must open at least one more role token (its own generation prompt).
func (a *ArtifactEngine) nextRoleStart(ctx context.Context, in *Input, history []uint32, text string, hot *hotEntry, roles []uint32) (int, bool) {
	isRole := func(id uint32) bool { return slices.Contains(roles, id) }
	n := a.countPrevious(ctx, in, hot, isRole)
	if n < 0 {
		// The frozen ids: the prompt's role tokens, and the one the model stopped at (not counted).
		n = 0
		for _, id := range history {
			if isRole(id) {
				n++
			}
		}
		if len(history) > 0 && isRole(history[len(history)-1]) {
			n--
		}
	}
	if n <= 0 {
		return 0, false
	}
	start, opens := -1, false
	for _, sp := range a.opts.Model.Tokenizer().AddedTokenSpans(text) {
		if !isRole(sp.ID) {
			continue
		}
		n--
		if n == 0 {
			start = sp.Start
			if len(history) > 0 && history[len(history)-1] == sp.ID {
				start = sp.End
			}
		} else if n < 0 {
			opens = true
			break
		}
	}
	return start, start >= 0 && opens
}

// renderPrevious renders the previous response's conversation (its input and output items) for
// newTurnStart, replaying from the hot entry's memo when there is one.
func (a *ArtifactEngine) renderPrevious(in *Input, hot *hotEntry) (string, error) {
	conv, err := conversation(in, a.opts.Items)
	if err != nil {
		return "", err
	}
	if hot == nil {
		return a.opts.Model.RenderText(chatRequest(in, conv)) // no memo wanted: nothing keeps it
	}
	text, _, err := a.render(in, conv, hot)
	return text, err
}

// errNoExactHistory means a checkpoint of the chain lacks the ids exact mode needs.
var errNoExactHistory = errors.New("checkpoint has no exact-mode ids")

// errIdentityChanged means the turn's fingerprint (instructions, tools, kwargs, …) differs from the
// previous response's: the frozen history would hide the change from the model, so the turn starts
// a new exact chain from a full render instead.
var errIdentityChanged = errors.New("fingerprint changed since the previous response")

// previous returns the checkpoint of the response this turn continues: the caller's, when it
// loaded it (in.Previous), else read from Checkpoints.
func (a *ArtifactEngine) previous(ctx context.Context, in *Input) (*store.Checkpoint, error) {
	if in.Previous != nil && in.Previous.ID == in.PreviousID {
		return in.Previous, nil
	}
	if a.opts.Checkpoints == nil {
		return nil, errNoExactHistory
	}
	return a.opts.Checkpoints.GetResponse(ctx, in.Tenant, in.PreviousID)
}

// rebuildExact rebuilds the frozen history ending with the previous response from the checkpoint
// chain. The previous response must have been made under fingerprint fp.
func (a *ArtifactEngine) rebuildExact(ctx context.Context, in *Input, fp [32]byte) ([]uint32, error) {
	var chain []*store.Checkpoint
	for id := in.PreviousID; id != ""; {
		var (
			cp  *store.Checkpoint
			err error
		)
		if len(chain) == 0 {
			cp, err = a.previous(ctx, in) // the caller's copy, when it has one
		} else if a.opts.Checkpoints == nil {
			err = errNoExactHistory
		} else {
			cp, err = a.opts.Checkpoints.GetResponse(ctx, in.Tenant, id)
		}
		if err != nil {
			return nil, fmt.Errorf("rebuild exact history at %s: %w", id, err)
		}
		if len(chain) == 0 && cp.Fingerprint != fp {
			return nil, fmt.Errorf("rebuild exact history at %s: %w", id, errIdentityChanged)
		}
		if cp.Mode != store.ModeExact || len(cp.PromptSuffixIDs) == 0 {
			return nil, fmt.Errorf("rebuild exact history at %s: %w", id, errNoExactHistory)
		}
		chain = append(chain, cp)
		if len(cp.PromptSuffixIDs) == cp.PromptLen {
			break // a root: its suffix is its whole prompt
		}
		id = cp.PreviousID
	}
	var ids []uint32
	for i := len(chain) - 1; i >= 0; i-- {
		ids = append(ids, chain[i].PromptSuffixIDs...)
		ids = a.closeTurn(append(ids, chain[i].GeneratedIDs...))
	}
	return ids, nil
}
