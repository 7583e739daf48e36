package prepare

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/store"
)

// HarmonyArtifacts prepares gpt-oss turns with token artifacts, in both continuation modes
// (docs/design.md "Harmony artifacts"):
//
//   - canonical: the ids are exactly a full Harmony render (HarmonyRender's). Harmony encodes
//     every message on its own, so a prompt's ids are its messages' ids one after the other; the
//     artifact keeps, at the end of each rendered message, the token index and the digest of the
//     render script of the messages so far ([harmony.Plan.Digests]). A continuation reuses the
//     previous prompt's ids up to the last message whose digest still agrees and encodes the
//     rest. The certified prefix ends where history changes: the system message (a new start
//     date), or the first analysis message auto_drop_analysis drops once a final answer follows.
//     The previous response's output is re-rendered as vLLM's message store holds it: each
//     message with the header the model wrote (the checkpoint's notes, [Prompt.AnnotateOutput]),
//     written in Harmony's order (`assistant to=functions.NAME<|channel|>commentary
//     <|constrain|>json`), a final answer closed by <|end|>.
//   - exact: the history is the previous prompt and its generated ids verbatim (a trailing
//     <|return|> closed as <|end|>, family.Harmony.CloseTurn); only the messages of this turn's
//     new items are rendered, then the generation prompt. The model's own tokens stay
//     (`<|channel|>commentary to=functions.NAME <|constrain|>json`, every analysis message), so
//     vLLM's prefix cache keeps every generated block. The conversation keeps its first turn's
//     start date, as vLLM's own continuations do.
//
// Every miss falls back to the full render with the same ids, and every turn resolves to one
// Outcome, as with [ArtifactEngine], whose stores, hot cache, commit and exact-mode rebuild it
// shares. It is safe for concurrent use.
type HarmonyArtifacts struct {
	h    HarmonyRender
	a    *ArtifactEngine
	tmpl string // the fingerprint's template digest: the Harmony renderer and its settings
	// items keeps the conversations' items mapped to messages across turns (with a hot cache:
	// a third of its bound, the share the parsed-item cache gets, NewHotCaches); nil: none.
	items *harmony.ItemCache
}

var _ Engine = (*HarmonyArtifacts)(nil)

// NewHarmonyArtifacts returns the Harmony artifact engine of opts (opts.Harmony set). It panics
// without opts.Harmony's Encoder, Family, Store or Metrics. opts.Model, when set, supplies the
// tokenizer digest of the fingerprint.
func NewHarmonyArtifacts(opts ArtifactOptions) *HarmonyArtifacts {
	if opts.Harmony == nil || opts.Family == nil || opts.Store == nil || opts.Metrics == nil {
		panic("prepare: NewHarmonyArtifacts needs Harmony, Family, Store and Metrics")
	}
	opts = opts.withDefaults()
	h := NewHarmonyRender(*opts.Harmony)
	o := h.h.Options
	tmpl := render.DigestString("harmony/" + harmonyVersion + "\x00" + o.ModelIdentity + "\x00" + o.KnowledgeCutoff + "\x00" + strconv.FormatBool(o.InstructionsInSystem))
	e := &HarmonyArtifacts{h: h, a: &ArtifactEngine{opts: opts}, tmpl: tmpl}
	if opts.Hot != nil {
		e.items = harmony.NewItemCache(int(opts.Hot.maxBytes / 3))
	}
	return e
}

// harmonyVersion names the layout of Harmony artifacts (boundaries at message ends, script
// digests); a change makes older artifacts invalid rather than misread.
const harmonyVersion = "1"

// Prepare implements Engine.
func (e *HarmonyArtifacts) Prepare(ctx context.Context, in *Input) (*Prompt, error) {
	date := ""
	if e.a.opts.Mode == store.ModeCanonical {
		// vLLM's message-store path: a continuation keeps its chain's first system and developer
		// messages. Exact mode keeps its own rules (a changed identity restarts the chain).
		var err error
		if in, date, err = inheritPreamble(in); err != nil {
			return nil, err
		}
	}
	opts := e.h.h.Options
	opts.StartDate = cmp.Or(date, harmony.StartDate(opts.StartDate, e.h.h.Now()))
	req := harmonyRequest(in)
	req.Cache = e.items
	if e.a.opts.Mode != store.ModeCanonical {
		req.Notes, req.NewInput = nil, 0 // exact mode: a restart renders the items as items
	}
	conv, err := harmony.FromResponses(req, opts)
	if err != nil {
		return nil, err
	}
	t := &harmonyTurn{conv: conv, plan: e.h.h.Encoder.Plan(conv.Messages, harmony.RenderOptions{})}
	a := e.a
	var state *harmony.DigestState
	if a.opts.Hot != nil && a.opts.Mode == store.ModeCanonical {
		// Hashing resumes from the previous turn's digest state (its encoder and messages are
		// compared, so the tenant's previous response's entry serves whether or not the turn
		// then uses its ids).
		t.digests, t.each, state, err = t.plan.MessageDigestsFrom(a.opts.Hot.harmonyDigests(in.Tenant, in.PreviousID))
	} else {
		t.digests, err = t.plan.Digests()
	}
	if err != nil {
		return nil, err
	}
	fp := e.fingerprint(in)
	hot := a.hotEntry(in, fp)
	pending := &pendingArtifact{fingerprint: fp, messages: t.plan.Len(), msgDigests: t.each, harmonyDigests: state,
		tenant: in.Tenant, previousID: in.PreviousID}
	p := &Prompt{SkippedTools: conv.SkippedTools, fingerprint: fp, pending: pending, engine: a, notes: newHarmonyNotes(e.h.h.Encoder, in, opts.StartDate, req, conv)}
	var prev *store.Artifact
	if hot != nil {
		p.Outcome, prev = OutcomeHitLocal, hot.art
	} else {
		p.Outcome, prev = a.resolve(ctx, in, fp)
	}
	if a.opts.Mode == store.ModeExact && in.PreviousID != "" {
		return e.prepareExact(ctx, in, p, t, prev, hot)
	}
	if err := e.extend(p, t, prev, hot); err != nil {
		return nil, err
	}
	if a.opts.Mode == store.ModeExact {
		p.exactSuffix = p.IDs // a root of the exact chain
	}
	return p, nil
}

// harmonyTurn is a turn's Harmony conversation, its plan and the plan's digests: of the
// messages so far, and (canonical mode with a hot cache) of each message on its own.
type harmonyTurn struct {
	conv    *harmony.Conversation
	plan    *harmony.Plan
	digests [][render.DigestSize]byte
	each    [][render.DigestSize]byte
}

// extend sets p's ids to the canonical render of t: prev's prompt ids up to the last message
// whose digest agrees, then the other messages encoded and the generation prompt. With hot
// (whose artifact prev is), the request reuses the JSON of the reused ids.
func (e *HarmonyArtifacts) extend(p *Prompt, t *harmonyTurn, prev *store.Artifact, hot *hotEntry) error {
	plan, digests := t.plan, t.digests
	keep := 0 // messages whose ids prev holds
	if prev != nil {
		for keep < len(digests) && keep < len(prev.Boundaries) && prev.Boundaries[keep].PrefixDigest == store.Digest16(digests[keep]) {
			keep++
		}
	}
	boundaries := make([]render.Boundary, len(digests))
	shifted := shiftedMessages(t, prev, hot)
	reused := 0
	if keep > 0 {
		reused = prev.Boundaries[keep-1].TokenIndex
		for i := range keep {
			b := prev.Boundaries[i]
			boundaries[i] = render.Boundary{Index: b.TokenIndex, Digest: b.PrefixDigest}
		}
	}
	// The ids after the reused ones first, on their own: then joined to prev's, in place when the
	// hot entry's ids have room after them (no copy of the history; render.JoinIDs).
	room := 1024 * (len(digests) - keep)
	if shifted != nil {
		room = max(room, len(prev.PromptIDs)-reused+64) // most of prev's messages come back
	}
	tail := make([]uint32, 0, room)
	var err error
	for i := keep; i < len(digests); i++ {
		if ids, ok := shifted.find(t.each, i); ok {
			tail = append(tail, ids...)
		} else if tail, err = plan.AppendMessage(tail, i); err != nil {
			return err
		}
		boundaries[i] = render.Boundary{Index: reused + len(tail), Digest: digests[i]}
	}
	tail = e.h.h.Encoder.AppendGenerationPrompt(tail)
	var enc render.Encoding
	switch {
	case keep > 0 && hot != nil && prev == hot.art && sameIDs(hot.enc.IDs, prev.PromptIDs):
		enc = render.JoinIDs(hot.enc, reused, tail)
	case keep > 0:
		enc.IDs = append(slices.Clip(prev.PromptIDs[:reused]), tail...)
	default:
		enc.IDs = tail
	}
	enc.Boundaries = boundaries
	pending := p.pending
	pending.enc, pending.fresh = enc, len(enc.Boundaries) // every digest is set
	p.IDs, p.Reused = enc.IDs, reused
	if prev == nil {
		return nil
	}
	if reused == 0 {
		p.Outcome = OutcomeDiverged
		return nil
	}
	if hot != nil && prev == hot.art && keep <= len(hot.jsonAt) {
		p.reuseJSON(hot, hot.jsonAt[keep-1], hot.jsonAt[:keep], reused)
	}
	e.maybeAudit(t, enc.IDs, p.fingerprint)
	return nil
}

// sameIDs reports whether a and b are the same slice (the hot entry's ids are its artifact's
// prompt ids, so its arena holds them).
func sameIDs(a, b []uint32) bool { return len(a) == len(b) && len(a) > 0 && &a[0] == &b[0] }

// prevMessages finds a message's ids in the previous prompt by the digest of its own render
// script: once a final answer follows, auto_drop_analysis drops the analysis messages before it,
// and every later message of the previous prompt is unchanged but shifted, so its ids are copied
// instead of encoded again (equal scripts encode to equal ids wherever they sit, see
// harmony.Plan.MessageDigests). A nil *prevMessages finds nothing.
type prevMessages struct {
	digests [][render.DigestSize]byte // of the previous prompt's messages, one per boundary
	art     *store.Artifact
	next    int // where the next lookup starts: messages recur in order
}

// shiftedMessages returns the previous prompt's messages when the hot entry has their digests
// for prev's prompt and the turn has its own.
func shiftedMessages(t *harmonyTurn, prev *store.Artifact, hot *hotEntry) *prevMessages {
	if hot == nil || prev != hot.art || len(t.each) != len(t.digests) || len(hot.msgDigests) != len(prev.Boundaries) {
		return nil
	}
	return &prevMessages{digests: hot.msgDigests, art: prev}
}

// find returns the previous prompt's ids of a message whose digest is each[i].
func (pm *prevMessages) find(each [][render.DigestSize]byte, i int) ([]uint32, bool) {
	if pm == nil {
		return nil, false
	}
	n := len(pm.digests)
	for k := range n {
		j := (pm.next + k) % n
		if pm.digests[j] != each[i] {
			continue
		}
		start, end := 0, pm.art.Boundaries[j].TokenIndex
		if j > 0 {
			start = pm.art.Boundaries[j-1].TokenIndex
		}
		if start < 0 || start > end || end > len(pm.art.PromptIDs) {
			return nil, false
		}
		pm.next = j + 1
		return pm.art.PromptIDs[start:end], true
	}
	return nil, false
}

// prepareExact builds the exact-mode prompt of a continuation: the frozen history (prev's
// prompt and generated ids, or the checkpoint chain rebuilt) then the messages of this turn's
// new items and the generation prompt. Without a history, or without new items to render, the
// turn starts a new exact chain from the canonical render.
func (e *HarmonyArtifacts) prepareExact(ctx context.Context, in *Input, p *Prompt, t *harmonyTurn, prev *store.Artifact, hot *hotEntry) (*Prompt, error) {
	a, plan := e.a, t.plan
	restart := func(outcome Outcome, why string, err error) (*Prompt, error) {
		if why != "" {
			a.opts.Logger.Warn(why+"; full render", "previous_response_id", in.PreviousID, "err", err)
		}
		if err := e.extend(p, t, nil, nil); err != nil {
			return nil, err
		}
		p.Outcome, p.exactSuffix = outcome, p.IDs
		return p, nil
	}
	var history []uint32
	if prev != nil {
		history = a.closeTurn(append(append(make([]uint32, 0, len(prev.PromptIDs)+len(prev.GeneratedIDs)+1), prev.PromptIDs...), prev.GeneratedIDs...))
	} else {
		rebuilt, err := a.rebuildExact(ctx, in, p.fingerprint)
		if err != nil {
			// No way to recover the frozen history (a response made before exact mode was on, a
			// changed identity): the canonical render is the only sequence left.
			return restart(p.Outcome, "exact history unavailable", err)
		}
		history = rebuilt
	}
	// The new turn: the rendered messages of the items after the previous conversation's.
	cp, err := a.previous(ctx, in)
	if err != nil {
		return restart(OutcomeDiverged, "previous checkpoint unavailable", err)
	}
	k := len(cp.ConversationItemIDs)
	first := plan.Len()
	for first > 0 && t.conv.MessageItems[plan.Index(first-1)] >= k {
		first--
	}
	if k == 0 || k >= len(in.Items) || first == plan.Len() {
		return restart(OutcomeDiverged, "", nil)
	}
	suffix := make([]uint32, 0, 64*(plan.Len()-first)+2)
	for i := first; i < plan.Len(); i++ {
		if suffix, err = plan.AppendMessage(suffix, i); err != nil {
			return nil, err
		}
	}
	suffix = e.h.h.Encoder.AppendGenerationPrompt(suffix)
	ids := append(history, suffix...)
	pending := p.pending
	pending.enc = render.Encoding{IDs: ids}
	pending.exactSuffix = suffix
	p.IDs, p.Reused, p.exactSuffix = ids, len(history), suffix
	if hot != nil && prev == hot.art && len(prev.PromptIDs) > 0 {
		// The history starts with the previous prompt, whose JSON the hot entry holds.
		p.reuseJSON(hot, len(hot.promptJSON), nil, len(prev.PromptIDs))
	}
	return p, nil
}

// fingerprint is the turn's model execution identity: the served model, tokenizer, the Harmony
// renderer and its settings, the request's instructions, tools and effort, the tenant's
// cache_salt. The start date is not part of it: in canonical mode the system message's digest
// tells a new date, and exact mode keeps the conversation's first date.
func (e *HarmonyArtifacts) fingerprint(in *Input) [32]byte {
	f := e.a.opts.Identity
	f.RendererVersion = render.RendererVersion
	if m := e.a.opts.Model; m != nil {
		f.TokenizerDigest = m.TokenizerDigest
	}
	f.TemplateDigest = e.tmpl
	effort := in.ReasoningEffort
	if effort == "" {
		effort = string(harmony.EffortMedium) // what the system message says without one
	}
	f.ChatTemplateKwargs = `{"reasoning_effort":` + strconv.Quote(effort) + `}`
	if e.a.opts.CacheSalt != nil {
		f.CacheSalt = e.a.opts.CacheSalt(in.Tenant)
	}
	set := in.Instructions != "" || in.EmptyInstructions
	f.InstructionsDigest = render.DigestString(strconv.FormatBool(set) + "\x00" + in.Instructions)
	f.ToolsDigest = render.DigestString(render.CompactJSON(in.Tools))
	return sha256.Sum256([]byte(f.Digest()))
}

// maybeAudit samples fast-path turns: the full render (with the turn's start date) is compared
// with the prepared ids, and a mismatch turns the fast path off for the fingerprint
// (docs/design.md "Certified suffix"). The inputs are immutable, so a background audit shares
// them safely.
func (e *HarmonyArtifacts) maybeAudit(t *harmonyTurn, ids []uint32, fp [32]byte) {
	a := e.a
	if a.opts.AuditRate <= 0 || rand.Float64() >= a.opts.AuditRate {
		return
	}
	run := func() {
		full, err := e.h.h.Encoder.Render(t.conv.Messages, harmony.RenderOptions{})
		a.opts.Metrics.audits.Inc()
		if err == nil && slices.Equal(full.IDs, ids) {
			return
		}
		a.opts.Metrics.auditMismatch.Inc()
		a.disabled.Store(fp, struct{}{})
		a.opts.Logger.Error("harmony artifact audit mismatch: fast path disabled for this fingerprint",
			"fingerprint", hex.EncodeToString(fp[:8]), "fast_len", len(ids), "full_len", len(full.IDs), "first_diff", firstDiff(full.IDs, ids), "err", err)
	}
	if a.opts.SyncAudit {
		run()
		return
	}
	go run()
}
