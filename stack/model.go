package stack

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// ModelConfig is one served model's configuration, for NewModelRuntime: the one assembly of a
// model's runtime, used by stitch serve, stitch bench and the tests. Optional fields' zero values
// give a model that renders every turn in full.
type ModelConfig struct {
	Name   string
	Render *render.Renderer
	// Family names the model family by vLLM's parser names; empty names: the default family's
	// (family.Names.WithDefaults: hermes + qwen3).
	Family family.Names
	// MaxModelLen is the context length (prompt + output).
	MaxModelLen        int
	ChatTemplateKwargs json.RawMessage
	// CacheSalt returns a tenant's cache_salt (nil: none); it is part of the fingerprint.
	CacheSalt func(tenant string) string
	// Mode is the continuation mode with artifacts (store.ModeCanonical or store.ModeExact).
	Mode store.Mode
	// Artifacts, when set, turns the token-artifact engine on (stitch serve without
	// --no-artifacts); nil: a full render every turn.
	Artifacts *Artifacts
	// Harmony, when set, renders prompts with Harmony instead of Render's chat template (gpt-oss,
	// Family openai + openai_gptoss): prepare.HarmonyArtifacts with Artifacts (in Mode), else a
	// full render every turn (prepare.HarmonyRender). Render still supplies the tokenizer.
	Harmony *prepare.Harmony
}

// Artifacts are the stores and settings the artifact engines of a server's models share.
type Artifacts struct {
	// Store is the token-artifact cache (store.Tiered). Required.
	Store prepare.ArtifactStore
	// Tiers is the store.Tiered NewArtifacts made (its Store), for stats; nil otherwise.
	Tiers *store.Tiered
	// Metrics are the engine's metrics (prepare.NewArtifactMetrics). Required.
	Metrics *prepare.ArtifactMetrics
	// Checkpoints rebuild an exact-mode prompt when its artifact is gone (the server's store).
	Checkpoints prepare.CheckpointReader
	// Hot and Items are the in-process caches (prepare.NewHotCaches); nil: none.
	Hot   *prepare.HotArtifacts
	Items *render.ItemCache
	// TTL is an artifact's lifetime (default 1h); AuditRate the fraction of fast-path turns
	// re-tokenized in full in the background; SyncAudit runs audits inline (tests).
	TTL       time.Duration
	AuditRate float64
	SyncAudit bool
	Logger    *slog.Logger
	Now       func() time.Time

	l1 *store.L1 // closed by Close
}

// ArtifactsConfig configures NewArtifacts: a server's artifact tiers and caches, as stitch serve's
// flags set them.
type ArtifactsConfig struct {
	// Sealer seals artifacts (shared keys when L2 is shared). Required.
	Sealer *store.Sealer
	// CacheMB bounds the local (L1) tier in MiB (--artifact-cache-mb; zero: 256). L2 is the
	// portable tier (store.RedisArtifacts; nil: single pod).
	CacheMB int
	L2      store.PortableCache
	// HotMB bounds the in-process hot caches in MiB (--artifact-hot-mb; 0: none).
	HotMB int
	// TTL is an artifact's lifetime (--artifact-ttl; zero: each tier's default).
	TTL time.Duration
	// AuditRate (--audit-rate), SyncAudit, Checkpoints, Logger and Now: see Artifacts.
	AuditRate   float64
	SyncAudit   bool
	Checkpoints prepare.CheckpointReader
	Logger      *slog.Logger
	Now         func() time.Time
	// Registry receives the artifact metrics (engine, tiers, hot cache). Required.
	Registry prometheus.Registerer
}

// NewArtifacts builds the artifact tiers (store.Tiered over an L1 and c.L2), the hot caches and
// the metrics every model's artifact engine shares. Close releases the L1.
func NewArtifacts(c ArtifactsConfig) (*Artifacts, error) {
	if c.Sealer == nil || c.Registry == nil {
		return nil, errors.New("stack: NewArtifacts needs a Sealer and a Registry")
	}
	l1, err := store.NewL1(store.L1Options{MaxMB: c.CacheMB, TTL: c.TTL})
	if err != nil {
		return nil, fmt.Errorf("artifact cache: %w", err)
	}
	tiered := store.NewTiered(store.TieredOptions{Sealer: c.Sealer, L1: l1, L2: c.L2, TTL: c.TTL, Logger: c.Logger, Now: c.Now})
	a := &Artifacts{Store: tiered, Tiers: tiered, Checkpoints: c.Checkpoints, TTL: c.TTL, AuditRate: c.AuditRate, SyncAudit: c.SyncAudit,
		Logger: c.Logger, Now: c.Now, l1: l1}
	if c.HotMB > 0 {
		a.Hot, a.Items = prepare.NewHotCaches(int64(c.HotMB)<<20, c.Registry)
	}
	a.Metrics = prepare.NewArtifactMetrics(c.Registry)
	c.Registry.MustRegister(store.NewCollector(tiered))
	return a, nil
}

// Close releases the artifact tiers NewArtifacts made.
func (a *Artifacts) Close() error {
	if a == nil || a.l1 == nil {
		return nil
	}
	return a.l1.Close()
}

// NewModelRuntime builds a model's runtime: its family from the parser names (an unknown pair is
// an error listing the supported ones) and its engine (artifacts when c.Artifacts is set).
func NewModelRuntime(c ModelConfig) (*server.ModelRuntime, error) {
	if c.Render == nil {
		return nil, fmt.Errorf("model %s: no render model", c.Name)
	}
	tok := c.Render.Tokenizer()
	names := c.Family.WithDefaults()
	fam, err := family.New(names, family.Vocabulary{TokenID: tok.TokenID, StopTokenIDs: c.Render.StopTokenIDs})
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", c.Name, err)
	}
	opts := prepare.ArtifactOptions{Model: c.Render, Family: fam, Mode: c.Mode, CacheSalt: c.CacheSalt, Harmony: c.Harmony,
		Identity: render.Fingerprint{ServedModel: c.Name, ToolCallParser: names.ToolCallParser, ReasoningParser: names.ReasoningParser}}
	if a := c.Artifacts; a != nil {
		if a.Store == nil || a.Metrics == nil {
			return nil, fmt.Errorf("model %s: artifacts need a Store and Metrics", c.Name)
		}
		opts.Store, opts.Metrics, opts.Checkpoints, opts.Hot, opts.Items = a.Store, a.Metrics, a.Checkpoints, a.Hot, a.Items
		opts.TTL, opts.AuditRate, opts.SyncAudit, opts.Logger, opts.Now = a.TTL, a.AuditRate, a.SyncAudit, a.Logger, a.Now
	}
	toolText := render.HarmonyToolText
	if c.Harmony == nil {
		toolText = c.Render.ToolTextRendered()
	}
	return &server.ModelRuntime{
		ToolText:           toolText,
		Name:               c.Name,
		Engine:             prepare.New(opts),
		Family:             fam,
		NewDecoder:         func() stream.TokenDecoder { return tok.NewDecodeStream() },
		MaxModelLen:        c.MaxModelLen,
		ChatTemplateKwargs: c.ChatTemplateKwargs,
		CacheSalt:          c.CacheSalt,
		EncodeTail:         c.Render.EncodeTail,
	}, nil
}
