package stack

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"time"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
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

// modelSalter returns a served model's cache_salt of a tenant: the given salter's (nil: none
// given) for the model, else the profile's pinned salt or the keyed derivation (cacheSalter).
func modelSalter(given func(tenant, model string) string, secret []byte, p configs.ModelProfile) func(tenant string) string {
	if given == nil {
		return cacheSalter(secret, p.Name, p.CacheSalt)
	}
	return func(tenant string) string { return given(tenant, p.Name) }
}
