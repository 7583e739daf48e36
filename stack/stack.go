package stack

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/store"
)

// Upstream is the model server client the stack's server sends generations to (server.Upstream:
// upstream.Client, vllmgrpc.Client, or a caller's wrapper of one).
type Upstream = server.Upstream

// Model is one served model as its directory loaded it (package modeldir, main's
// loadProfileModel): the tokenizer and chat template, Harmony's settings for gpt-oss, and the
// family its parser names select.
type Model struct {
	// Render is the model's tokenizer and chat template. Required.
	Render *render.Renderer
	// Harmony, when set, renders its prompts with Harmony (gpt-oss); Render still tokenizes.
	Harmony *prepare.Harmony
	// Family names the model family by vLLM's parser names; empty names: the default family's
	// (family.Names.WithDefaults: hermes + qwen3).
	Family family.Names
}

// Config is what Open assembles: stitch serve's settings, the loaded models, and the parts a
// caller (stitch bench, a test) supplies ready-made instead of having them built from the
// settings. A nil part is built as stitch serve builds it.
type Config struct {
	// Settings are stitch serve's settings (configs.Load; configs.Default with edits for a bench
	// or a test). Required; Open does not modify them.
	Settings *configs.Config
	// Models holds the loaded model of every profile in Settings.Models, by profile name.
	Models map[string]Model
	// Logger receives the assembly's and the server's logs. Nil: discarded.
	Logger *slog.Logger
	// Registry receives every metric (server, engines, stores). Nil: a new registry.
	Registry *prometheus.Registry

	// Upstream is the model server client. Nil: Settings.Upstream.URL is connected (vLLM's HTTP
	// API, or grpc://host:port for its gRPC engine API), or with no URL the built-in simulator
	// runs in process with the first model. A client given here is the caller's to close.
	Upstream Upstream
	// Checkpoints is the response store. Nil: the Bolt file in Settings.Store.DataDir (swept
	// hourly), behind Redis with Settings.Store.Redis; background runs and conversations then
	// live beside them. Given: they live in process memory.
	Checkpoints store.Checkpoints
	// SealKeys seal artifacts (the first signs). Nil: Settings.Auth.SealKeysFile, or with none a
	// random key per process.
	SealKeys []store.SealKey
	// ArtifactL2 is the portable artifact tier. Nil: Redis's with Settings.Store.Redis, else none.
	ArtifactL2 store.PortableCache
	// CacheSalt returns vLLM's cache_salt of a tenant for a model. Nil: a profile's pinned salt,
	// else HMAC-SHA256 keyed by Settings.Auth.CacheSaltSecret (or the first seal key).
	CacheSalt func(tenant, model string) string
	// WrapEngine, when set, wraps each model's prompt engine (stitch bench records preparations).
	WrapEngine func(model string, e prepare.Engine) prepare.Engine
}

// Stack is an assembled stitch server and everything it runs on. Open builds it; Close releases
// it. Its fields are read-only; Server is safe for concurrent use, Close is not (call it once,
// after serving stopped).
type Stack struct {
	// Server is the HTTP API (an http.Handler); Server.Shutdown drains background responses.
	Server *server.Server
	// Runtimes are the served models' runtimes, by name.
	Runtimes map[string]*server.ModelRuntime
	// Artifacts are the artifact tiers and caches the models share; nil with
	// Settings.Artifacts.Disabled (a full render every turn).
	Artifacts *Artifacts
	// Upstream is the model server client and UpstreamURL its address (the built-in
	// simulator's when it runs one).
	Upstream    Upstream
	UpstreamURL string
	// Registry holds every metric of the stack.
	Registry *prometheus.Registry

	logger  *slog.Logger
	closers []closer // in the order opened; Close runs them last-first
}

// closer releases one part Open opened.
type closer struct {
	what  string
	close func() error
}

// opened records a part to release on Close, after every part opened later.
func (s *Stack) opened(what string, close func() error) {
	s.closers = append(s.closers, closer{what, close})
}

// Close releases what Open opened, in reverse order: the artifact tiers, the Redis fallback's
// replay, the Redis client, the store sweeper, the Bolt file, the upstream client, the built-in
// simulator (parts a caller gave in Config stay open). It returns every failure joined; a second
// Close does nothing. It does not drain the server: Serve does (or stop serving HTTP and call
// Server.Shutdown), then Close.
func (s *Stack) Close() error {
	var errs []error
	for i := len(s.closers) - 1; i >= 0; i-- {
		if err := s.closers[i].close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", s.closers[i].what, err))
		}
	}
	s.closers = nil
	return errors.Join(errs...)
}

// Open assembles a stitch server as stitch serve runs it: upstream client, response store,
// sealer, artifact tiers, the models' runtimes, authentication, limits and cache salts. On an
// error it releases what it had opened. ctx bounds the start (upstream probes) and, while it
// lasts, the store's sweeper.
func Open(ctx context.Context, c Config) (_ *Stack, err error) {
	cfg := c.Settings
	if cfg == nil || len(cfg.Models) == 0 {
		return nil, errors.New("stack: Open needs Settings with at least one model")
	}
	for _, p := range cfg.Models {
		if c.Models[p.Name].Render == nil {
			return nil, fmt.Errorf("stack: model %s: not loaded (Config.Models)", p.Name)
		}
	}
	s := &Stack{logger: c.Logger, Registry: c.Registry, Upstream: c.Upstream}
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	if s.Registry == nil {
		s.Registry = prometheus.NewRegistry()
	}
	defer func() {
		if err != nil {
			_ = s.Close()
		}
	}()
	logger, reg := s.logger, s.Registry

	var maxLens map[string]int
	if s.Upstream == nil {
		if maxLens, err = s.connect(ctx, cfg, c.Models); err != nil { // upstream.go
			return nil, err
		}
	} else {
		s.UpstreamURL = s.Upstream.BaseURL()
	}

	stores, err := s.openStores(ctx, c) // stores.go
	if err != nil {
		return nil, err
	}
	if s.Artifacts, err = s.openArtifacts(c, stores); err != nil {
		return nil, err
	}

	var auth middleware.Authenticator = middleware.DevAuth{}
	if cfg.Auth.APIKeysFile != "" {
		if auth, err = middleware.NewFileAuth(cfg.Auth.APIKeysFile, logger); err != nil {
			return nil, err
		}
	}
	secret := saltSecret(cfg, stores.sealKeys[0].Secret)
	salt := c.CacheSalt
	if salt == nil {
		salt = passthroughSalter(secret, cfg.Models)
	}
	s.Runtimes = make(map[string]*server.ModelRuntime, len(cfg.Models))
	renderers := make(map[string]*render.Renderer, len(cfg.Models))
	for _, p := range cfg.Models {
		m := c.Models[p.Name]
		renderers[p.Name] = m.Render
		maxLen, reported := modelMaxLen(cfg.Upstream.MaxModelLen, maxLens, p.Name)
		if !reported {
			logger.Warn("upstream did not report max_model_len; assuming 32768", "model", p.Name)
		}
		rt, err := NewModelRuntime(ModelConfig{
			Name: p.Name, Render: m.Render, MaxModelLen: maxLen,
			Family: m.Family, Harmony: m.Harmony,
			ChatTemplateKwargs: p.ChatTemplateKwargs,
			CacheSalt:          modelSalter(c.CacheSalt, secret, p),
			Mode:               p.ContinuationMode, Artifacts: s.Artifacts,
		})
		if err != nil {
			return nil, err
		}
		if !rt.ToolText.Name {
			// The model would never see a request's tools (Llama 3.0's template, DeepSeek's and
			// Gemma 3's official ones): its answers are text, never calls.
			logger.Warn("chat template renders no tool definitions: requests' tools will not reach the model; give --chat-template a tool template (README, Model families)", "model", p.Name)
		}
		if c.WrapEngine != nil {
			rt.Engine = c.WrapEngine(p.Name, rt.Engine)
		}
		s.Runtimes[p.Name] = rt
	}
	var reseed *server.Reseeder
	if s.Artifacts != nil {
		reseed = &server.Reseeder{Sealer: stores.sealer, TTL: cfg.Artifacts.TTL}
	}
	opts := server.Options{
		Logger: logger, Registry: reg, Upstream: s.Upstream, Models: s.Runtimes, Checkpoints: stores.checkpoints, Auth: auth, Reseed: reseed,
		MaxBodyBytes: cfg.Server.MaxBodyBytes, MaxInputItems: cfg.Server.MaxInputItems, UpstreamMetricsPath: cfg.Server.UpstreamMetricsPath,
		Limits: serverLimits(cfg, renderers), CacheSalt: salt,
		Instance: instanceName(), StoreReady: stores.ready,
	}
	if stores.records != nil {
		opts.Runs = store.NewRuns(stores.records, store.RunsOptions{Lease: cfg.Server.BackgroundLease})
		opts.Conversations = store.NewConversations(stores.records, store.ConversationsOptions{TTL: cfg.Store.ResponseTTL, MaxItems: cfg.Server.MaxInputItems})
	}
	if s.Server, err = server.New(opts); err != nil {
		return nil, err
	}
	return s, nil
}

// openArtifacts builds the artifact tiers and caches, unless Settings turn artifacts off.
func (s *Stack) openArtifacts(c Config, st *stores) (*Artifacts, error) {
	ac := c.Settings.Artifacts
	if ac.Disabled {
		return nil, nil
	}
	l2 := c.ArtifactL2
	if l2 == nil {
		l2 = st.portable
	}
	a, err := NewArtifacts(ArtifactsConfig{
		Sealer: st.sealer, CacheMB: ac.CacheMB, L2: l2, HotMB: ac.HotMB, TTL: ac.TTL,
		AuditRate: ac.AuditRate, Checkpoints: st.checkpoints, Logger: s.logger, Registry: s.Registry,
	})
	if err != nil {
		return nil, err
	}
	s.opened("artifact tiers", a.Close)
	return a, nil
}

// instanceName names this process as the owner of its background responses (in logs and the
// run records other replicas read).
func instanceName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}
