package main

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/modeldir"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/store"
)

func runServe(ctx context.Context, env cliEnv, args []string) error {
	return runServeReady(ctx, env, args, nil)
}

// runServeReady is runServe calling ready (when not nil) with the listening address once it
// accepts connections (tests listen on port 0).
func runServeReady(ctx context.Context, env cliEnv, args []string, ready func(addr string)) error {
	cfg, err := configs.Load("stitch serve", args, os.Getenv, env.stdout)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		fmt.Fprintf(env.stderr, "stitch serve: %v\n", err)
		return errUsage
	}
	families := make(map[string]family.Names, len(cfg.Models))
	for _, p := range cfg.Models { // before any model loads: an unknown family is a usage error
		names, err := profileFamily(p) // cmd_serve_harmony.go: gpt-oss is served through Harmony
		if err != nil {
			return fmt.Errorf("model %s: %w", p.Name, err)
		}
		if err := family.Check(names); err != nil {
			fmt.Fprintf(env.stderr, "stitch serve: model %s: %v\n", p.Name, err)
			return errUsage
		}
		families[p.Name] = names
	}
	logger, err := newLogger(cfg.Log, env.stderr)
	if err != nil {
		return err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	models := make(map[string]*render.Renderer, len(cfg.Models))
	harmonies := make(map[string]*prepare.Harmony, len(cfg.Models))
	for _, p := range cfg.Models {
		m, h, err := loadProfileModel(p, families[p.Name], os.Getenv)
		if err != nil {
			return fmt.Errorf("model %s: %w", p.Name, err)
		}
		models[p.Name], harmonies[p.Name] = m, h
		if h != nil && h.Options.StartDate == "" {
			logger.Warn("gpt-oss served through Harmony with an unpinned start date: every prompt's first tokens change when the day rolls over (set VLLM_SYSTEM_START_DATE as on vLLM)", "model", p.Name)
		}
	}

	upstreamURL := cfg.Upstream.URL
	if upstreamURL == "" {
		first := cfg.Models[0]
		addr, stop, err := startBuiltinSim(ctx, logger, models[first.Name], first.Name, cfg.Sim)
		if err != nil {
			return err
		}
		defer stop()
		upstreamURL = "http://" + addr
		logger.Info("no --upstream given: running the built-in simulator with the bundled demo model (not a real LLM)",
			"sim", upstreamURL, "model", first.Name)
	}
	applyMemoryLimit(logger, cfg)
	up, maxLens, closeUp, err := connectUpstream(ctx, logger, cfg, upstreamURL, models) // cmd_serve_grpc.go
	if err != nil {
		return err
	}
	defer closeUp()

	// The embedded store keeps responses as long as Redis would (--response-ttl); an hourly sweep
	// deletes older ones so --data-dir does not grow without bound.
	local, err := store.OpenBolt(cfg.Store.DataDir, store.BoltOptions{Retention: cfg.Store.ResponseTTL, Logger: logger})
	if err != nil {
		return fmt.Errorf("open store in %s: %w", cfg.Store.DataDir, err)
	}
	defer local.Close()
	sweepCtx, stopSweep := context.WithCancel(ctx)
	ticker := time.NewTicker(time.Hour)
	swept := make(chan struct{})
	go func() {
		defer close(swept)
		sweepEvery(sweepCtx, logger, boltSweeper{local}, ticker.C)
	}()
	defer func() { // before local.Close: never sweep a closed store
		ticker.Stop()
		stopSweep()
		<-swept
	}()
	if cfg.Auth.SealKeysFile == "" && cfg.Store.Redis != "" {
		logger.Warn("--redis without --seal-keys: each pod seals with its own random key, so artifacts are not portable")
	}
	sealKeys, err := store.LoadSealKeys(cfg.Auth.SealKeysFile)
	if err != nil {
		return err
	}
	sealer, err := store.NewSealer(sealKeys, store.SealerOptions{})
	if err != nil {
		return fmt.Errorf("seal keys: %w", err)
	}
	// Checkpoints in Redis are sealed only with shared keys: a per-process key would make every
	// other pod read them as corrupt.
	var checkpointSealer *store.Sealer
	if cfg.Auth.SealKeysFile != "" {
		checkpointSealer = sealer
	}
	var checkpoints store.Checkpoints = local
	var portable store.PortableCache
	var storeReady func(context.Context) error // nil: no shared store to check
	// Background responses and conversations: in the data directory's file, or in Redis (shared
	// by every replica) with --redis.
	records, err := store.BoltRecords(local)
	if err != nil {
		return fmt.Errorf("open store in %s: %w", cfg.Store.DataDir, err)
	}
	if cfg.Store.Redis != "" {
		ropts, err := store.ParseRedisURL(string(cfg.Store.Redis))
		if err != nil {
			return fmt.Errorf("--redis: %w", err)
		}
		// go-redis logs failed dials through a process-wide logger; route it to ours at Debug (the
		// store already turns every failure into ErrUnavailable, logged once where it matters).
		redis.SetLogger(redisLogger{logger})
		rc := store.NewRedisClient(ropts)
		defer rc.Close()
		storeReady = store.NewRedisProbe(rc, 500*time.Millisecond, time.Second).Check
		fallback := store.NewFallback(store.NewRedisCheckpoints(rc, store.RedisCheckpointsOptions{TTL: cfg.Store.ResponseTTL, Sealer: checkpointSealer}), local, store.FallbackOptions{Logger: logger})
		defer fallback.Close() // before local.Close and rc.Close (defers run last-first)
		checkpoints = fallback
		reg.MustRegister(store.NewCheckpointCollector(fallback))
		portable = store.NewRedisArtifacts(rc, store.RedisArtifactsOptions{})
		records = store.RedisRecords(rc, "")
		logger.Info("sharing responses and artifacts through Redis", "redis", ropts)
	}
	var artifacts *server.Artifacts // nil: --no-artifacts, a full render every turn
	if !cfg.Artifacts.Disabled {
		artifacts, err = server.NewArtifacts(server.ArtifactsConfig{
			Sealer: sealer, CacheMB: cfg.Artifacts.CacheMB, L2: portable, HotMB: cfg.Artifacts.HotMB, TTL: cfg.Artifacts.TTL,
			AuditRate: cfg.Artifacts.AuditRate, Checkpoints: checkpoints, Logger: logger, Registry: reg,
		})
		if err != nil {
			return err
		}
		defer artifacts.Close()
	}

	var auth middleware.Authenticator = middleware.DevAuth{}
	if cfg.Auth.APIKeysFile != "" {
		if auth, err = middleware.NewFileAuth(cfg.Auth.APIKeysFile, logger); err != nil {
			return err
		}
	}

	runtimes := make(map[string]*server.ModelRuntime, len(cfg.Models))
	for _, p := range cfg.Models {
		maxLen, reported := modelMaxLen(cfg.Upstream.MaxModelLen, maxLens, p.Name)
		if !reported {
			logger.Warn("upstream did not report max_model_len; assuming 32768", "model", p.Name)
		}
		rt, err := server.NewModelRuntime(server.ModelConfig{
			Name: p.Name, Render: models[p.Name], MaxModelLen: maxLen,
			Family: families[p.Name], Harmony: harmonies[p.Name],
			ChatTemplateKwargs: p.ChatTemplateKwargs,
			CacheSalt:          cacheSalter(saltSecret(cfg, sealKeys[0].Secret), p.Name, p.CacheSalt),
			Mode:               p.ContinuationMode, Artifacts: artifacts,
		})
		if err != nil {
			return err
		}
		if !rt.ToolText.Name {
			// The model would never see a request's tools (Llama 3.0's template, DeepSeek's and
			// Gemma 3's official ones): its answers are text, never calls.
			logger.Warn("chat template renders no tool definitions: requests' tools will not reach the model; give --chat-template a tool template (README, Model families)", "model", p.Name)
		}
		runtimes[p.Name] = rt
	}
	var reseed *server.Reseeder
	if artifacts != nil {
		reseed = &server.Reseeder{Sealer: sealer, TTL: cfg.Artifacts.TTL}
	}
	srv, err := server.New(server.Options{
		Logger: logger, Registry: reg, Upstream: up, Models: runtimes, Checkpoints: checkpoints, Auth: auth, Reseed: reseed,
		MaxBodyBytes: cfg.Server.MaxBodyBytes, MaxInputItems: cfg.Server.MaxInputItems, UpstreamMetricsPath: cfg.Server.UpstreamMetricsPath,
		Limits: serverLimits(cfg, models), CacheSalt: passthroughSalter(saltSecret(cfg, sealKeys[0].Secret), cfg.Models),
		Runs:          store.NewRuns(records, store.RunsOptions{Lease: cfg.Server.BackgroundLease}),
		Conversations: store.NewConversations(records, store.ConversationsOptions{TTL: cfg.Store.ResponseTTL, MaxItems: cfg.Server.MaxInputItems}),
		Instance:      instanceName(),
		StoreReady:    storeReady,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Server.Listen)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 30 * time.Second}
	if ready != nil {
		ready(ln.Addr().String())
	}
	logger.Info("stitch serving the Responses API", "addr", ln.Addr().String(), "upstream", upstreamURL,
		"data_dir", cfg.Store.DataDir, "models", len(runtimes), "version", version,
		"auth", map[bool]string{true: "api keys", false: "off (dev mode: any key is tenant default)"}[cfg.Auth.APIKeysFile != ""])
	if cfg.Auth.APIKeysFile == "" && !loopbackOnly(ln.Addr()) {
		logger.Warn("authentication is off and the listener accepts connections from other hosts: anyone who reaches it reads and continues every stored response; set --api-keys, or --listen 127.0.0.1:PORT", "addr", ln.Addr().String())
	}
	return serveUntilDone(ctx, logger, hs, ln, cfg.Server.ShutdownTimeout, srv.Shutdown)
}

// loopbackOnly reports whether a listener's address is reachable from this host only.
func loopbackOnly(addr net.Addr) bool {
	tcp, ok := addr.(*net.TCPAddr)
	return ok && tcp.IP.IsLoopback()
}

// instanceName names this process as the owner of its background responses (in logs and the
// run records other replicas read).
func instanceName() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%x", host, os.Getpid(), b)
}

// boltSweeper sweeps the embedded store: expired responses, then expired background runs and
// conversations.
type boltSweeper struct{ b *store.Bolt }

func (s boltSweeper) Sweep(ctx context.Context) (int, error) {
	n, err := s.b.Sweep(ctx)
	if err != nil {
		return n, err
	}
	m, err := store.SweepRecords(ctx, s.b)
	return n + m, err
}

// sweeper deletes expired records (store.Bolt).
type sweeper interface {
	Sweep(ctx context.Context) (int, error)
}

// sweepEvery sweeps s once now and at every tick until ctx ends.
func sweepEvery(ctx context.Context, logger *slog.Logger, s sweeper, ticks <-chan time.Time) {
	for {
		n, err := s.Sweep(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			logger.Warn("sweep expired responses from the embedded store", "err", err)
		case n > 0:
			logger.Info("swept expired responses from the embedded store", "records", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
	}
}

// serveUntilDone serves until ctx ends, then shuts down gracefully, letting open streams and
// background responses (drain) finish within timeout; drain fails those still running then.
func serveUntilDone(ctx context.Context, logger *slog.Logger, hs *http.Server, ln net.Listener, timeout time.Duration, drain func(context.Context) error) error {
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	logger.Info("shutting down", "timeout", timeout)
	sctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	herr := hs.Shutdown(sctx)
	if err := drain(sctx); err != nil {
		logger.Warn("shutdown: background responses", "err", err)
	}
	if herr != nil {
		return fmt.Errorf("shutdown: %w", herr)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadModel loads a model directory (the bundled demo model when dir is ""), with the chat
// template file templateFile replacing the directory's when it is not "".
func loadModel(dir, templateFile string) (*render.Renderer, error) {
	d, err := modeldir.Open(dir)
	if err != nil {
		return nil, err
	}
	tmpl, err := modeldir.ReadTemplateFile(templateFile)
	if err != nil {
		return nil, err
	}
	return d.Renderer(render.Options{ChatTemplate: tmpl})
}

// startBuiltinSim runs the simulator in-process on a loopback port.
func startBuiltinSim(ctx context.Context, logger *slog.Logger, m *render.Renderer, name string, sc configs.Sim) (string, func(), error) {
	s, err := sim.New(sim.Options{
		Tokenizer: m.Tokenizer(), Renderer: sim.ModelRenderer(m), ServedModelName: name,
		Fast: sc.Fast, Seed: sc.Seed, Logger: logger.With("component", "sim"),
	})
	if err != nil {
		return "", nil, fmt.Errorf("built-in simulator: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("built-in simulator: %w", err)
	}
	hs := &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	stop := func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}
	return ln.Addr().String(), stop, nil
}

// modelMaxLen is a model's context length: the --max-model-len override when set (whatever
// /v1/models lists), else what the upstream reported for it, else 32768 (reported false).
func modelMaxLen(override int, reported map[string]int, name string) (int, bool) {
	if override > 0 {
		return override, true
	}
	if n := reported[name]; n > 0 {
		return n, true
	}
	return 32768, false
}

// cacheSalter returns the per-tenant cache_salt: HMAC-SHA256(secret, tenant, model), so tenants
// never share (or probe) each other's prefix cache. A pinned salt wins.
func cacheSalter(secret []byte, model, pinned string) func(tenant string) string {
	if pinned != "" {
		return func(string) string { return pinned }
	}
	return func(tenant string) string {
		mac := hmac.New(sha256.New, append([]byte("stitch cache salt v1\x00"), secret...))
		io.WriteString(mac, tenant)
		mac.Write([]byte{0})
		io.WriteString(mac, model)
		return hex.EncodeToString(mac.Sum(nil)[:16])
	}
}

func newLogger(lc configs.Log, w io.Writer) (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(lc.Level)); err != nil {
		return nil, fmt.Errorf("log level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	if lc.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// redisLogger adapts slog to go-redis's logger.
type redisLogger struct{ l *slog.Logger }

func (r redisLogger) Printf(ctx context.Context, format string, v ...any) {
	r.l.DebugContext(ctx, fmt.Sprintf(format, v...), "component", "redis")
}
