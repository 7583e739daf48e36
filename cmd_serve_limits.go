package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
	"github.com/stitchllm/stitch/upstream"
)

// serverLimits is the server's hardening configuration (issue 14) from cfg.
func serverLimits(cfg *configs.Config, models map[string]*render.Renderer) server.Limits {
	return server.Limits{
		MaxJSONDepth:           cfg.Server.MaxJSONDepth,
		MaxConcurrentResponses: cfg.Server.MaxConcurrentResponses,
		WriteTimeout:           orNegative(cfg.Server.WriteTimeout),
		MaxTokenBytes:          maxTokenBytes(models),
		UpstreamFirstByte:      cfg.Upstream.Timeout,
		UpstreamIdle:           cfg.Upstream.IdleTimeout,
		Body: middleware.BodyOptions{
			ReadTimeout:      cfg.Server.BodyReadTimeout,
			MaxInflightBytes: int64(cfg.Server.MaxInflightBodyMB) << 20,
		},
	}
}

// orNegative maps a configured 0 ("off") to the server's spelling of off (negative).
func orNegative(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// maxTokenBytes is, per model, its longest token in bytes (Qwen3: 128, a run of spaces): no text
// of n bytes tokenizes to fewer than n/max tokens, which lets the server refuse oversized input
// before tokenizing it.
func maxTokenBytes(models map[string]*render.Renderer) map[string]int {
	out := make(map[string]int, len(models))
	for name, m := range models {
		tok := m.Tokenizer()
		longest := 0
		for id := range tok.VocabSize() {
			longest = max(longest, len(tok.Decode([]uint32{uint32(id)})))
		}
		if longest > 0 {
			out[name] = longest
		}
	}
	return out
}

// upstreamOptions is the vLLM client's configuration.
func upstreamOptions(cfg *configs.Config, url string) upstream.Options {
	return upstream.Options{BaseURL: url, APIKey: string(cfg.Upstream.APIKey),
		FirstByteTimeout: cfg.Upstream.Timeout, IdleTimeout: cfg.Upstream.IdleTimeout}
}

// saltSecret is the key of the per-tenant cache_salt: --cache-salt-secret, else (as before it
// existed) the first seal key's secret.
func saltSecret(cfg *configs.Config, sealSecret []byte) []byte {
	if cfg.Auth.CacheSaltSecret != "" {
		return []byte(cfg.Auth.CacheSaltSecret)
	}
	return sealSecret
}

// passthroughSalter returns the cache_salt of a tenant for any model a pass-through generation
// names: the profile's pinned salt for a served model that pins one, else the keyed derivation.
func passthroughSalter(secret []byte, profiles []configs.ModelProfile) func(tenant, model string) string {
	pinned := map[string]string{}
	for _, p := range profiles {
		if p.CacheSalt != "" {
			pinned[p.Name] = p.CacheSalt
		}
	}
	return func(tenant, model string) string {
		if salt, ok := pinned[model]; ok {
			return salt
		}
		return cacheSalter(secret, model, "")(tenant)
	}
}

// applyMemoryLimit sets the Go runtime's soft memory limit: --memory-limit-mb, else 90 % of the
// cgroup's limit. GOMEMLIMIT, when set, was applied by the runtime and wins. Without a limit the
// heap may grow to twice its live size before a collection (GOGC=100), which is what made RSS
// climb far past the caches.
func applyMemoryLimit(logger *slog.Logger, cfg *configs.Config) {
	if os.Getenv("GOMEMLIMIT") != "" {
		logger.Info("memory limit from GOMEMLIMIT", "bytes", debug.SetMemoryLimit(-1))
		return
	}
	limit, source := memoryLimit(cfg, cgroupMemoryLimit)
	debug.SetMemoryLimit(limit)
	logger.Info("Go memory limit set", "mib", limit>>20, "source", source)
}

// memoryLimit returns the Go memory limit in bytes and where it comes from: --memory-limit-mb;
// else 90 % of the cgroup's limit; else, with no limit visible to the process, 1.25 × the live
// heap the configured caches and bounds allow (configs.Config.DerivedMemoryLimitMB), so that a
// process without a container limit does not grow to twice its live heap between collections.
func memoryLimit(cfg *configs.Config, cgroup func() (int64, error)) (int64, string) {
	if mb := cfg.Server.MemoryLimitMB; mb > 0 {
		return int64(mb) << 20, "memory-limit-mb"
	}
	if cg, err := cgroup(); err == nil && cg > 0 {
		return cg / 10 * 9, "90% of the cgroup memory limit"
	}
	return int64(cfg.DerivedMemoryLimitMB()) << 20, "derived from the caches and bounds (1.25 × the live heap formula; set --memory-limit-mb to choose)"
}

// cgroupMemoryLimit reads cgroup v2's memory.max (v1's limit_in_bytes as a fallback); 0 when unlimited.
func cgroupMemoryLimit() (int64, error) {
	for _, path := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		data, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := strings.TrimSpace(string(data))
		if s == "max" {
			return 0, nil
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		if n >= 1<<60 { // v1's "unlimited"
			return 0, nil
		}
		return n, nil
	}
	return 0, errors.New("no cgroup memory limit file")
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
