package prepare

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/internal/arena"
	"github.com/stitchllm/stitch/internal/jsonappend"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/render/harmony"
	"github.com/stitchllm/stitch/store"
)

// ArtifactStore is the token-artifact cache the fast path reads and writes (store.Tiered). A
// turn's artifact is written as what it adds to the artifact it extended (PutChild's parent, as
// Get or the hot cache gave it), so storage grows with the new turn, not the whole history.
type ArtifactStore interface {
	Get(ctx context.Context, tenant, id string) (*store.Artifact, store.Tier, error)
	PutChild(ctx context.Context, a, parent *store.Artifact) error
}

// CheckpointReader reads the checkpoints exact mode rebuilds a lost history from
// (store.Checkpoints).
type CheckpointReader interface {
	GetResponse(ctx context.Context, tenant, id string) (*store.Checkpoint, error)
}

// ArtifactOptions configure the artifact engine of one model.
type ArtifactOptions struct {
	Model *render.Renderer
	// Harmony, when set, renders the model's prompts with Harmony instead of the chat template
	// (gpt-oss); [New] then returns a [HarmonyArtifacts] (with Store) or a [HarmonyRender].
	Harmony *Harmony
	// Family is the model's family (reasoning opened by the prompt, exact mode's turn ends).
	Family family.Family
	Store  ArtifactStore
	// Mode is store.ModeCanonical (ids equal a full render) or store.ModeExact (history frozen).
	Mode store.Mode
	// Identity is the model's fixed part of the fingerprint (name, parsers, LoRA); per-request
	// fields are filled in by Prepare.
	Identity render.Fingerprint
	// CacheSalt returns the tenant's cache_salt (part of the fingerprint): a function of the
	// tenant alone, which the engine does not call again for a conversation's next turn
	// (fingerprintMemo).
	CacheSalt func(tenant string) string
	// TTL is an artifact's lifetime.
	TTL time.Duration
	// AuditRate is the fraction of fast-path turns re-tokenized in full in the background.
	AuditRate float64
	// SyncAudit runs audits synchronously (tests); otherwise each runs in its own goroutine.
	SyncAudit bool
	// Checkpoints rebuild an exact-mode prompt when its artifact is gone (required in exact mode).
	Checkpoints CheckpointReader
	Logger      *slog.Logger
	Now         func() time.Time
	Metrics     *ArtifactMetrics
	// Hot keeps the last turn's prompt text, render memo and JSON per conversation in process
	// memory (canonical mode); nil: every continuation takes the digest path.
	Hot *HotArtifacts
	// Items caches parsed Responses items across turns; nil: none.
	Items *render.ItemCache
}

// ArtifactMetrics are the fast path's Prometheus metrics, shared by every model.
type ArtifactMetrics struct {
	auditMismatch prometheus.Counter
	audits        prometheus.Counter
	writes        *prometheus.CounterVec
}

// NewArtifactMetrics registers the artifact metrics on reg.
func NewArtifactMetrics(reg prometheus.Registerer) *ArtifactMetrics {
	m := &ArtifactMetrics{
		auditMismatch: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stitch_audit_mismatch_total", Help: "Audited fast-path prompts whose ids differed from a full tokenization (target: 0 ever).",
		}),
		audits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "stitch_audits_total", Help: "Fast-path prompts re-tokenized in full and compared.",
		}),
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitch_artifact_writes_total", Help: "Artifact writes after completed responses, by result (ok, error).",
		}, []string{"result"}),
	}
	reg.MustRegister(m.auditMismatch, m.audits, m.writes)
	return m
}

// ArtifactEngine prepares continuations from token artifacts (docs/design.md "Certified
// suffix"), falling back to a full render with the same ids on every miss. It is safe for
// concurrent use.
type ArtifactEngine struct {
	opts     ArtifactOptions
	disabled sync.Map // fingerprint [32]byte → struct{}: fast path off after an audit mismatch
	// jsonScratch holds *[]byte buffers a hot continuation encodes its new ids' JSON into
	// before they are appended to the previous turn's (pendingArtifact.joinJSON).
	jsonScratch sync.Pool
	// idJSON returns the JSON of the model's vocabulary (built on first use, with a hot cache
	// only, whose turns encode their ids for the next turn's request); nil: ids are computed.
	idJSON func() *jsonappend.IDTable
}

var _ Engine = (*ArtifactEngine)(nil)

// NewArtifactEngine returns the artifact engine. It panics without Model, Family, Store or
// Metrics.
func NewArtifactEngine(opts ArtifactOptions) *ArtifactEngine {
	if opts.Model == nil || opts.Family == nil || opts.Store == nil || opts.Metrics == nil {
		panic("prepare: NewArtifactEngine needs Model, Family, Store and Metrics")
	}
	a := &ArtifactEngine{opts: opts.withDefaults()}
	if tok := opts.Model.Tokenizer(); opts.Hot != nil && tok != nil {
		a.idJSON = sync.OnceValue(func() *jsonappend.IDTable { return jsonappend.NewIDTable(tok.VocabSize()) })
	}
	return a
}

// idTable returns the vocabulary's JSON, nil when the engine keeps none.
func (a *ArtifactEngine) idTable() *jsonappend.IDTable {
	if a.idJSON == nil {
		return nil
	}
	return a.idJSON()
}

// withDefaults fills the optional fields: a discarding logger, the wall clock, a one-hour TTL.
func (opts ArtifactOptions) withDefaults() ArtifactOptions {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	return opts
}

// pendingArtifact is what a prepared turn needs to write its artifact once the response completed.
type pendingArtifact struct {
	fingerprint     [32]byte
	fingerprintMemo *fingerprintMemo // fingerprint and what it was computed from (hotEntry.fingerprint)
	enc             render.Encoding
	fresh           int      // enc.Boundaries[fresh:] have no digest yet (render.ExtendText)
	text            string   // the full render (exact mode splits the new turn out of it)
	exactSuffix     []uint32 // exact mode: the ids tokenized this turn
	memo            *render.RenderMemo
	messages        int
	items           *render.ItemsPrefix // the conversation after its stored items (hotEntry.items)
	// msgDigests are the digests of each rendered message's own script (Harmony canonical;
	// hotEntry.msgDigests), harmonyDigests their plan's digest state.
	msgDigests     [][render.DigestSize]byte
	harmonyDigests *harmony.DigestState
	// jsonPrefix is the previous turn's JSON of ids[:jsonPrefixIDs] this prompt reused, with the
	// offsets of its first len(jsonPrefixAt) boundaries' ids: Commit encodes the rest for the
	// next turn, after it in jsonArena when there is room (jsonPrefix is jsonBase's first bytes,
	// the previous turn's whole JSON).
	jsonPrefix    []byte
	jsonBase      []byte
	jsonArena     *arena.Arena[byte]
	jsonPrefixAt  []int
	jsonPrefixIDs int
	// joined is the JSON joinJSON made while preparing: the whole prompt's, appended in place
	// to the reused prefix, or the new ids' alone, for Commit to append; nil: Commit encodes
	// them.
	joined *joinedJSON
	// tenant owns the conversation; previousID is the response this turn continues ("" for none).
	tenant, previousID string
	// base is previousID's artifact when this turn read it (hot cache or store): Commit stores
	// the new artifact as what it adds to it.
	base *store.Artifact
	// history is the conversation the response ends (Prompt.KeepHistory), kept with its entry.
	history *History
}

// Prepare implements Engine.
func (a *ArtifactEngine) Prepare(ctx context.Context, in *Input) (*Prompt, error) {
	conv, prevFP, err := a.conversation(in)
	if err != nil {
		return nil, err
	}
	fpMemo := a.fingerprintFrom(in, conv, prevFP)
	fp := fpMemo.fp
	hot := a.hotEntry(in, fp)
	text, memo, err := a.render(in, conv, hot)
	if err != nil {
		return nil, err
	}
	pending := &pendingArtifact{fingerprint: fp, fingerprintMemo: fpMemo, text: text, memo: memo, messages: len(conv.Messages), items: conv.Prefix, tenant: in.Tenant, previousID: in.PreviousID}
	p := &Prompt{Text: text, SkippedTools: conv.SkippedTools, ReasoningOpen: a.opts.Family.OpensReasoning(text), fingerprint: fp, pending: pending, engine: a}
	if hot != nil && a.opts.Mode == store.ModeCanonical {
		pending.base = hot.art
		return a.prepareHot(in, p, hot), nil
	}

	var prev *store.Artifact
	if hot != nil {
		p.Outcome, prev = OutcomeHitLocal, hot.art
	} else {
		p.Outcome, prev = a.resolve(ctx, in, fp)
	}
	pending.base = prev
	if a.opts.Mode == store.ModeExact && in.PreviousID != "" {
		return a.prepareExact(ctx, in, p, prev, hot)
	}
	if prev == nil {
		pending.enc = a.opts.Model.EncodeWithBoundaries(text)
		pending.fresh = len(pending.enc.Boundaries)
		p.IDs = pending.enc.IDs
		if a.opts.Mode == store.ModeExact {
			p.exactSuffix = p.IDs // a root of the exact chain
		}
		return p, nil
	}
	enc, reuse := a.opts.Model.Extend(encodingOf(prev), text)
	pending.enc, pending.fresh = enc, len(enc.Boundaries)
	p.IDs, p.Reused = enc.IDs, reuse.Tokens
	if reuse.Tokens == 0 {
		p.Outcome = OutcomeDiverged
		return p, nil
	}
	a.maybeAudit(in, text, enc.IDs, fp, false)
	return p, nil
}

// conversation maps the turn's items to messages. With a hot cache it resumes from the previous
// turn's conversation prefix, which render.FromResponses takes only where it covers this turn's
// first stored items, and keeps this turn's for the next. It also returns the previous turn's
// fingerprint memo, if the hot cache has one (fingerprintFrom).
func (a *ArtifactEngine) conversation(in *Input) (*render.Conversation, *fingerprintMemo, error) {
	var (
		resume *render.ItemsPrefix
		prevFP *fingerprintMemo
	)
	if a.opts.Hot != nil && in.PreviousID != "" {
		resume, prevFP = a.opts.Hot.resumeState(in.Tenant, in.PreviousID)
	}
	if a.opts.Hot == nil || a.opts.Items == nil {
		conv, err := conversation(in, a.opts.Items)
		return conv, prevFP, err
	}
	conv, err := resumeConversation(in, a.opts.Items, resume, true)
	return conv, prevFP, err
}

// render applies the chat template. With a hot cache it records a memo for the next turn and
// replays from hot's, the previous turn's, when there is one.
func (a *ArtifactEngine) render(in *Input, conv *render.Conversation, hot *hotEntry) (string, *render.RenderMemo, error) {
	req := chatRequest(in, conv)
	var (
		text string
		memo *render.RenderMemo
		err  error
	)
	switch {
	case hot != nil:
		text, memo, err = a.opts.Model.RenderTextMemo(req, hot.memo)
	case a.opts.Hot != nil:
		text, memo, err = a.opts.Model.RenderTextMemo(req, nil)
	default:
		text, err = a.opts.Model.RenderText(req)
	}
	if err != nil {
		return "", nil, fmt.Errorf("render chat template: %w", err)
	}
	return text, memo, nil
}

// prepareHot prepares a continuation whose previous prompt (text, ids, their JSON) is in the hot
// cache: the texts are compared directly, only the changed tail is tokenized, and the request
// copies the reused ids' JSON.
func (a *ArtifactEngine) prepareHot(in *Input, p *Prompt, hot *hotEntry) *Prompt {
	pending := p.pending
	known := pending.memo.CommonPrefix() // with hot.text, whose render's memo this one replayed
	enc, reuse, fresh := a.opts.Model.ExtendTextFrom(hot.enc, hot.text, p.Text, known)
	pending.enc, pending.fresh = enc, fresh
	p.IDs, p.Reused, p.Outcome = enc.IDs, reuse.Tokens, OutcomeHitLocal
	if reuse.Tokens == 0 {
		p.Outcome = OutcomeDiverged
		return p
	}
	p.reuseJSON(hot, hot.jsonAt[fresh-1], hot.jsonAt[:fresh], reuse.Tokens)
	scratch, _ := a.jsonScratch.Get().(*[]byte)
	if scratch == nil {
		scratch = new([]byte)
	}
	if js, ok := pending.joinJSON(a.idTable(), scratch); ok {
		p.PromptPrefix, p.PromptPrefixIDs = js, len(enc.IDs)
	}
	a.jsonScratch.Put(scratch)
	a.maybeAudit(in, p.Text, enc.IDs, p.fingerprint, true)
	return p
}

// fastPathOff reports whether an audit mismatch turned the fast path off for fingerprint fp.
func (a *ArtifactEngine) fastPathOff(fp [32]byte) bool {
	_, off := a.disabled.Load(fp)
	return off
}

// hotEntry returns the in-process state of the previous response when this turn can use it: a
// continuation of a response this process prepared and completed, under the same identity and
// mode, with the fast path not disabled for it.
func (a *ArtifactEngine) hotEntry(in *Input, fp [32]byte) *hotEntry {
	if a.opts.Hot == nil || in.PreviousID == "" {
		return nil
	}
	if a.fastPathOff(fp) {
		return nil
	}
	e := a.opts.Hot.get(in.Tenant, in.PreviousID, a.opts.Now())
	if e == nil || e.art.Fingerprint != fp || e.art.Tenant != in.Tenant || e.art.Mode != a.opts.Mode {
		a.opts.Hot.misses.Add(1)
		return nil
	}
	a.opts.Hot.hits.Add(1)
	return e
}

// maybeAudit samples fast-path turns for a background audit.
func (a *ArtifactEngine) maybeAudit(in *Input, text string, ids []uint32, fp [32]byte, replayed bool) {
	if a.opts.AuditRate > 0 && rand.Float64() < a.opts.AuditRate {
		a.audit(in, text, ids, fp, replayed)
	}
}

// resolve finds the previous response's artifact and says why it cannot be used when it cannot.
func (a *ArtifactEngine) resolve(ctx context.Context, in *Input, fp [32]byte) (Outcome, *store.Artifact) {
	if in.PreviousID == "" {
		return OutcomeNew, nil
	}
	if a.fastPathOff(fp) {
		return OutcomeDisabled, nil
	}
	art, tier, err := a.opts.Store.Get(ctx, in.Tenant, in.PreviousID)
	switch {
	case errors.Is(err, store.ErrExpired):
		return OutcomeExpired, nil
	case errors.Is(err, store.ErrInvalid):
		return OutcomeInvalid, nil
	case err != nil:
		// Not found, or the portable tier is down: a full render costs CPU, never correctness.
		return OutcomeMiss, nil
	case art.Fingerprint != fp || art.Tenant != in.Tenant || art.Mode != a.opts.Mode:
		return OutcomeInvalid, nil
	case tier == store.TierPortable:
		return OutcomeHitPortable, art
	}
	return OutcomeHitLocal, art
}

// fingerprintMemo is a turn's fingerprint with the request's parts it was computed from: the
// conversation's next turn, prepared under the same identity (model, parsers, tokenizer,
// template), for the same tenant and cache salt, with the same kwargs, instructions and tools,
// has the same fingerprint and takes it from here instead of hashing them again (four SHA-256
// passes and, by the same engine, the salt's HMAC: about 3 % of a 100k continuation's
// preparation). Immutable.
type fingerprintMemo struct {
	engine       *ArtifactEngine
	identity     render.Fingerprint // the engine's fixed fields (ArtifactEngine.identity)
	tenant, salt string
	kwargs       string // the raw chat_template_kwargs
	instructions string
	toolsDigest  string
	fp           [32]byte
}

// fingerprintFrom returns the turn's fingerprint: prev's (the previous turn's, nil: none) when
// it was computed from the same parts, else computed. The salt is taken as prev's when prev is
// this engine's, whose CacheSalt is a function of the tenant; another engine's (the same model
// served by a replaced engine, or a benchmark's) is compared with this one's.
func (a *ArtifactEngine) fingerprintFrom(in *Input, conv *render.Conversation, prev *fingerprintMemo) *fingerprintMemo {
	tools := conv.ToolsDigest()
	if prev != nil && prev.tenant == in.Tenant && prev.kwargs == string(in.Kwargs) && prev.instructions == in.Instructions &&
		prev.toolsDigest == tools && (prev.engine == a || prev.identity == a.identity() && prev.salt == a.salt(in.Tenant)) {
		return prev
	}
	m := &fingerprintMemo{engine: a, identity: a.identity(), tenant: in.Tenant, salt: a.salt(in.Tenant), kwargs: string(in.Kwargs),
		instructions: in.Instructions, toolsDigest: tools}
	f := m.identity
	f.ChatTemplateKwargs = render.CompactJSON(in.Kwargs)
	if a.opts.CacheSalt != nil {
		f.CacheSalt = m.salt
	}
	f.InstructionsDigest = render.DigestString(in.Instructions)
	f.ToolsDigest = tools
	m.fp = sha256.Sum256([]byte(f.Digest()))
	return m
}

// identity is the fixed part of the engine's fingerprints.
func (a *ArtifactEngine) identity() render.Fingerprint {
	f := a.opts.Identity
	f.RendererVersion = render.RendererVersion
	f.TokenizerDigest = a.opts.Model.TokenizerDigest
	f.TemplateDigest = a.opts.Model.TemplateDigest
	return f
}

// salt is the tenant's cache salt ("" without CacheSalt).
func (a *ArtifactEngine) salt(tenant string) string {
	if a.opts.CacheSalt == nil {
		return ""
	}
	return a.opts.CacheSalt(tenant)
}

// audit re-tokenizes the whole prompt and compares; when the template replayed part of its
// work from a memo (replayed), it also re-renders the conversation without one and compares the
// texts. A mismatch turns the fast path off for the fingerprint. The inputs are immutable, so
// the goroutine shares them safely.
func (a *ArtifactEngine) audit(in *Input, text string, ids []uint32, fp [32]byte, replayed bool) {
	run := func() {
		full := a.opts.Model.Encode(text)
		a.opts.Metrics.audits.Inc()
		what, ok := "ids", slices.Equal(full, ids)
		if ok && replayed {
			plain, _, err := RenderConversation(a.opts.Model, in)
			what, ok = "render", err == nil && plain == text
		}
		if ok {
			return
		}
		a.opts.Metrics.auditMismatch.Inc()
		a.disabled.Store(fp, struct{}{})
		a.opts.Logger.Error("artifact audit mismatch: fast path disabled for this fingerprint",
			"fingerprint", hex.EncodeToString(fp[:8]), "differs", what, "fast_len", len(ids), "full_len", len(full), "first_diff", firstDiff(full, ids))
	}
	if a.opts.SyncAudit {
		run()
		return
	}
	go run()
}

// commit writes the artifact of a completed (or incomplete) response (Prompt.Commit). Failed
// and cancelled responses never reach here, so they never advance an artifact. reused is the
// prompt's leading ids taken from pending.base's (Prompt.Reused): every path that sets it builds
// them as a copy of that artifact's ids (render's joinIDs, exact mode's history), so PutChild
// need not compare them again (store.Artifact.SharedIDs).
func (a *ArtifactEngine) commit(ctx context.Context, responseID string, pending *pendingArtifact, reused int, out Output) {
	tenant := pending.tenant
	// Digests are computed now rather than while preparing: only a continuation that misses the
	// hot cache (another pod, an eviction) needs them.
	textDigest := render.FillDigests(pending.text, &pending.enc, pending.fresh)
	art := &store.Artifact{
		Tenant: tenant, ResponseID: responseID, Fingerprint: pending.fingerprint, Mode: a.opts.Mode,
		PromptIDs: pending.enc.IDs, PromptTextLen: len(pending.text), PromptTextDigest: store.Digest16(textDigest),
		Boundaries: storeBoundaries(pending.enc.Boundaries), GeneratedIDs: out.TokenIDs(),
		ExpiresAt: a.opts.Now().Add(a.opts.TTL),
	}
	for _, r := range out.Ranges() {
		if len(art.ItemBounds) > 0 && r.Start < art.ItemBounds[len(art.ItemBounds)-1].End {
			continue
		}
		art.ItemBounds = append(art.ItemBounds, store.ItemBound{Start: r.Start, End: r.End})
	}
	if pending.base != nil {
		art.SharedIDs = reused
	}
	if err := a.opts.Store.PutChild(ctx, art, pending.base); err != nil {
		a.opts.Metrics.writes.WithLabelValues("error").Inc()
		a.opts.Logger.Warn("write artifact", "response_id", responseID, "err", err)
		return
	}
	a.opts.Metrics.writes.WithLabelValues("ok").Inc()
	if a.opts.Hot != nil {
		js, at, jsonArena := pending.promptJSON(a.idTable())
		a.opts.Hot.put(&hotEntry{
			key: hotKey{tenant, responseID}, art: art, text: pending.text, enc: pending.enc, memo: pending.memo,
			promptJSON: js, jsonAt: at, jsonArena: jsonArena, messages: pending.messages, items: pending.items,
			msgDigests: pending.msgDigests, harmonyDigests: pending.harmonyDigests, history: pending.history,
			fingerprint: pending.fingerprintMemo,
		})
		// The entry just continued holds nearly the same prompt and is rarely continued again (a
		// branch): it is retired, unless another turn that continued it has not committed yet, so
		// the cache holds one entry per live conversation head. A branch from it later gets the
		// same ids by the digest path.
		if pending.previousID != "" {
			a.opts.Hot.retire(tenant, pending.previousID)
		}
	}
}

func encodingOf(a *store.Artifact) render.Encoding {
	enc := render.Encoding{IDs: a.PromptIDs, Boundaries: make([]render.Boundary, len(a.Boundaries))}
	for i, b := range a.Boundaries {
		enc.Boundaries[i] = render.Boundary{Offset: b.TextOffset, Index: b.TokenIndex, Digest: b.PrefixDigest}
	}
	return enc
}

func storeBoundaries(bs []render.Boundary) []store.Boundary {
	out := make([]store.Boundary, len(bs))
	for i, b := range bs {
		out[i] = store.Boundary{TextOffset: b.Offset, TokenIndex: b.Index, PrefixDigest: b.Digest}
	}
	return out
}

func firstDiff(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}
