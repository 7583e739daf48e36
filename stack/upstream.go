package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/sim"
	"github.com/stitchllm/stitch/upstream"
	"github.com/stitchllm/stitch/upstream/vllmgrpc"
)

// connect starts the built-in simulator when Settings name no upstream, then connects the
// upstream client (connectUpstream) and returns each model's context length as the upstream
// reports it.
func (s *Stack) connect(ctx context.Context, cfg *configs.Config, models map[string]Model) (map[string]int, error) {
	renderers := make(map[string]*render.Renderer, len(models))
	for name, m := range models {
		renderers[name] = m.Render
	}
	s.UpstreamURL = cfg.Upstream.URL
	if s.UpstreamURL == "" {
		first := cfg.Models[0]
		addr, stop, err := startBuiltinSim(ctx, s.logger, renderers[first.Name], first.Name, cfg.Sim)
		if err != nil {
			return nil, err
		}
		s.opened("built-in simulator", stop)
		s.UpstreamURL = "http://" + addr
		s.logger.Info("no --upstream given: running the built-in simulator with the bundled demo model (not a real LLM)",
			"sim", s.UpstreamURL, "model", first.Name)
	}
	up, maxLens, closeUp, err := connectUpstream(ctx, s.logger, cfg, s.UpstreamURL, renderers)
	if err != nil {
		return nil, err
	}
	s.opened("upstream client", func() error { closeUp(); return nil })
	s.Upstream = up
	return maxLens, nil
}

// startBuiltinSim runs the simulator in-process on a loopback port; stop shuts it down (5 s).
func startBuiltinSim(ctx context.Context, logger *slog.Logger, m *render.Renderer, name string, sc configs.Sim) (string, func() error, error) {
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
	stop := func() error {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
		return nil
	}
	return ln.Addr().String(), stop, nil
}

// connectUpstream builds the upstream client for upstreamURL: vLLM's HTTP API, or its gRPC engine
// API for grpc://host:port. It returns the client, each model's context length as the
// upstream reports it (--max-model-len applies on top, in modelMaxLen) and a function that releases the client.
func connectUpstream(ctx context.Context, logger *slog.Logger, cfg *configs.Config, upstreamURL string,
	models map[string]*render.Renderer) (Upstream, map[string]int, func(), error) {
	target, isGRPC := vllmgrpc.ParseTarget(upstreamURL)
	if !isGRPC {
		up := upstream.New(upstreamOptions(cfg, upstreamURL))
		// vLLM may still be loading: wait up to 10 s for /v1/models.
		maxLens, err := up.MaxModelLens(ctx, 10*time.Second)
		if err != nil {
			logger.Warn("upstream /v1/models unavailable at start", "err", err)
		}
		checkTokenIDs(ctx, logger, up, cfg.Models[0].Name)
		return up, maxLens, func() {}, nil
	}
	tenant, err := grpcConfigCheck(cfg)
	if err != nil {
		return nil, nil, nil, err
	}
	c, err := vllmgrpc.New(vllmgrpc.Options{
		Target: target, FirstByteTimeout: cfg.Upstream.Timeout, IdleTimeout: cfg.Upstream.IdleTimeout,
		// The server salts every turn per tenant; with one tenant (checked above) there is no
		// prefix cache to keep apart, so the salt may go unsent. A tenant added later (an
		// --api-keys reload) is refused per request rather than sharing the cache.
		AcceptSalt: func(ctx context.Context, _ string) error {
			if got := middleware.Tenant(ctx); got != tenant {
				return fmt.Errorf("tenant %q is not the single tenant %q this gRPC upstream was started for; restart with an HTTP upstream to serve several tenants", got, tenant)
			}
			return nil
		},
	})
	if err != nil {
		return nil, nil, nil, err
	}
	maxLens, err := grpcModelInfo(ctx, logger, c, cfg, models)
	if err != nil {
		c.Close()
		return nil, nil, nil, err
	}
	return c, maxLens, func() { c.Close() }, nil
}

// grpcConfigCheck refuses what the gRPC interface (smg-grpc-proto's GenerateRequest: no
// cache_salt, no LoRA adapter, no model name) cannot carry, and returns the single tenant.
func grpcConfigCheck(cfg *configs.Config) (string, error) {
	var errs []error
	tenant, tenants := middleware.DevTenant, 1
	if cfg.Auth.APIKeysFile != "" {
		names, err := apiKeyTenants(cfg.Auth.APIKeysFile)
		if err != nil {
			return "", err
		}
		tenants = len(names)
		if tenants == 1 {
			tenant = names[0]
		}
	}
	var pinned []string
	for _, p := range cfg.Models {
		if p.CacheSalt != "" {
			pinned = append(pinned, p.Name)
		}
	}
	if err := vllmgrpc.CheckConfig(vllmgrpc.Config{Tenants: tenants}); err != nil {
		errs = append(errs, fmt.Errorf("%w: several tenants need per-tenant cache salts to keep their prefix caches apart", err))
	}
	if len(pinned) > 0 {
		errs = append(errs, fmt.Errorf("%w: model profiles %v pin a cache_salt", vllmgrpc.ErrCacheSaltUnsupported, pinned))
	}
	if cfg.Upstream.APIKey != "" {
		errs = append(errs, errors.New("--upstream-api-key: the gRPC engine API takes no key; drop it or use the HTTP upstream"))
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("--upstream %s: %w", cfg.Upstream.URL, err)
	}
	return tenant, nil
}

// apiKeyTenants returns the distinct tenants of an --api-keys file ([{"tenant","key_sha256"}]).
func apiKeyTenants(path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("api keys: %w", err)
	}
	var entries []struct {
		Tenant string `json:"tenant"`
	}
	if err := json.Unmarshal(data, &entries); err != nil {
		return nil, fmt.Errorf("api keys %s: %w", path, err)
	}
	var names []string
	for _, e := range entries {
		if !slices.Contains(names, e.Tenant) {
			names = append(names, e.Tenant)
		}
	}
	return names, nil
}

// grpcModelInfo reads GetModelInfo (waiting up to 10 s for the engine, as the HTTP path waits for
// /v1/models): the context length of every profile, and the checks that need the served name and
// EOS ids. GenerateRequest names no model: a profile whose name is not the engine's served model
// (a LoRA adapter on the HTTP path) would silently be served by the base model, so it is refused.
func grpcModelInfo(ctx context.Context, logger *slog.Logger, c *vllmgrpc.Client, cfg *configs.Config,
	models map[string]*render.Renderer) (map[string]int, error) {
	var mi vllmgrpc.ModelInfo
	var err error
	deadline := time.Now().Add(10 * time.Second)
	for {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		mi, err = c.ModelInfo(cctx)
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	out := map[string]int{}
	if err != nil {
		logger.Warn("upstream GetModelInfo unavailable at start: served name and EOS ids unchecked", "err", err)
	} else {
		var lora []string
		for _, p := range cfg.Models {
			out[p.Name] = mi.MaxContextLength
			if mi.ServedModelName != "" && p.Name != mi.ServedModelName {
				lora = append(lora, p.Name)
			}
			if m := models[p.Name]; m != nil {
				for _, id := range mi.EOSTokenIDs {
					if !slices.Contains(m.StopTokenIDs, id) {
						// vLLM stops on its EOS ids anyway; the parser then sees an id it does not
						// take for the end of a turn.
						logger.Warn("the engine's EOS id is not a stop id of the model profile", "model", p.Name, "eos_token_id", id)
					}
				}
			}
		}
		if len(lora) > 0 {
			return nil, fmt.Errorf("--upstream %s: %w: profiles %v are not the engine's served model %q, and GenerateRequest names no model or adapter; use the HTTP upstream",
				cfg.Upstream.URL, vllmgrpc.ErrLoRAUnsupported, lora, mi.ServedModelName)
		}
		logger.Info("gRPC engine", "served_model", mi.ServedModelName, "max_context_length", mi.MaxContextLength,
			"eos_token_ids", mi.EOSTokenIDs, "default_sampling_params", mi.DefaultSamplingParamsJSON)
	}
	if cfg.Upstream.MaxModelLen > 0 {
		for _, p := range cfg.Models {
			out[p.Name] = cfg.Upstream.MaxModelLen
		}
		out[""] = cfg.Upstream.MaxModelLen
	}
	return out, nil
}

// upstreamOptions is the vLLM client's configuration.
func upstreamOptions(cfg *configs.Config, url string) upstream.Options {
	return upstream.Options{BaseURL: url, APIKey: string(cfg.Upstream.APIKey),
		FirstByteTimeout: cfg.Upstream.Timeout, IdleTimeout: cfg.Upstream.IdleTimeout}
}

// checkTokenIDs runs one probe generation at startup and logs an error when the upstream ignores
// return_token_ids: every turn would then fail (stitch decodes ids, never text). An upstream still
// loading is not an error here; readiness and each turn check again.
func checkTokenIDs(ctx context.Context, logger *slog.Logger, up *upstream.Client, model string) {
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	switch err := up.Probe(pctx, model); {
	case errors.Is(err, upstream.ErrNoTokenIDs):
		logger.Error("the upstream ignores return_token_ids: every response will fail; use vLLM 0.10.2 or later, and no proxy that drops unknown parameters",
			"model", model, "err", err)
	case err != nil:
		logger.Warn("startup probe generation failed; token ids are checked per turn", "model", model, "err", err)
	}
}
