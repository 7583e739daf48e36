package configs

import (
	"encoding/json"
	"log/slog"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stitchllm/stitch/internal/continuation"
)

// Config is the whole configuration of `stitch serve`. The zero value is not valid; use Default or Load.
type Config struct {
	Server    Server         `yaml:"server"`
	Upstream  Upstream       `yaml:"upstream"`
	Models    []ModelProfile `yaml:"models"`
	Store     Store          `yaml:"store"`
	Artifacts Artifacts      `yaml:"artifacts"`
	Auth      Auth           `yaml:"auth"`
	Log       Log            `yaml:"log"`
	Sim       Sim            `yaml:"sim"`
}

// Server configures the HTTP listener and request limits.
type Server struct {
	// Listen is the address to serve on. Default ":8080".
	Listen string `yaml:"listen"`
	// MaxBodyBytes caps a request body. Default 32 MiB (Codex sends ~40 KB on turn one; long agent
	// histories replayed in full reach megabytes).
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxInputItems caps the number of input items of one request. Default 10000.
	MaxInputItems int `yaml:"max_input_items"`
	// UpstreamMetricsPath serves vLLM's own GET /metrics (the vllm:* series) on this path of
	// stitch's port, for a router that scrapes each endpoint's port (llm-d's EPP: set its
	// metrics-data-source path to it). Default /vllm/metrics; "" turns it off.
	UpstreamMetricsPath string `yaml:"upstream_metrics_path"`
	// ShutdownTimeout is how long a graceful shutdown waits for streams to finish. Default 30s.
	ShutdownTimeout time.Duration `yaml:"shutdown_timeout"`
	// BackgroundLease is how long a background response's owner lease lasts (renewed every third
	// of it); past it, a response whose replica died reads as failed. Default 30s.
	BackgroundLease time.Duration `yaml:"background_lease"`
	// MaxJSONDepth bounds the nesting of request bodies (arrays and objects), checked by a linear
	// scan before any recursive parse. Default 128.
	MaxJSONDepth int `yaml:"max_json_depth"`
	// MaxConcurrentResponses bounds generations in flight (POST /v1/responses and pass-through
	// chat/completions and completions); beyond it requests get 429 with Retry-After before any
	// work. 0: unbounded. Default 512.
	MaxConcurrentResponses int `yaml:"max_concurrent_responses"`
	// BodyReadTimeout bounds the time a client may take to send its request body. Default 60s.
	BodyReadTimeout time.Duration `yaml:"body_read_timeout"`
	// MaxInflightBodyMB bounds the request body bytes all running requests hold together, in MiB;
	// beyond it requests get 429. 0: unbounded. Default 256.
	MaxInflightBodyMB int `yaml:"max_inflight_body_mb"`
	// WriteTimeout bounds each write to a client; a client that stops reading is dropped. Default 60s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// MemoryLimitMB is the Go runtime's soft memory limit in MiB (debug.SetMemoryLimit). 0: 90 %
	// of the cgroup's memory limit when there is one, else none (GOMEMLIMIT, when set, wins).
	MemoryLimitMB int `yaml:"memory_limit_mb"`
}

// Upstream configures the vLLM server stitch sends completions to.
type Upstream struct {
	// URL is vLLM's base address (no /v1). Empty: run the built-in simulator in-process with the
	// bundled demo model (the README's `go run . serve`).
	URL string `yaml:"url"`
	// APIKey is sent to vLLM as a Bearer token when set (vLLM --api-key).
	APIKey Secret `yaml:"api_key"`
	// MaxModelLen overrides the context length read from the upstream's /v1/models. 0: ask upstream.
	MaxModelLen int `yaml:"max_model_len"`
	// Timeout bounds the wait for a generation's first byte (vLLM streams nothing before the first
	// token, so it covers queueing and prefill), and for any pass-through response's headers except
	// non-streamed generations. Default 120s.
	Timeout time.Duration `yaml:"timeout"`
	// IdleTimeout bounds the gap between two chunks of a generation's stream. Default 60s.
	IdleTimeout time.Duration `yaml:"idle_timeout"`
}

// ModelProfile is one served model's profile (an entry of models).
type ModelProfile struct {
	// Name is the served model name clients send as "model" (and vLLM's --served-model-name).
	Name string `yaml:"name"`
	// Dir holds tokenizer.json and tokenizer_config.json (or chat_template.jinja). Empty: the bundled
	// Qwen3 demo model.
	Dir string `yaml:"dir"`
	// ToolCallParser is vLLM's --tool-call-parser for this model, spelled as vLLM spells it; with
	// ReasoningParser it selects the model family (output parser, stop ids, forced tool calls).
	// Empty: the default family's, "hermes" (Qwen3; package family's Default).
	ToolCallParser string `yaml:"tool_call_parser"`
	// ReasoningParser is vLLM's --reasoning-parser for this model. Empty with an empty
	// ToolCallParser: the default family's, "qwen3"; empty with a named one: none.
	ReasoningParser string `yaml:"reasoning_parser"`
	// ChatTemplate is a Jinja chat template file that replaces the directory's (vLLM's
	// --chat-template), for models whose own template renders no tools. Empty: the directory's.
	ChatTemplate string `yaml:"chat_template"`
	// Mode is the continuation mode: "canonical" (default) or "exact". Empty: Artifacts.Mode.
	Mode string `yaml:"mode"`
	// ContinuationMode is Mode parsed (continuation.Parse) by Load.
	ContinuationMode continuation.Mode `yaml:"-"`
	// ChatTemplateKwargs are defaults passed to the chat template as a JSON object in YAML's key order
	// (e.g. {"enable_thinking": false}); a request's reasoning.effort overrides enable_thinking.
	ChatTemplateKwargs json.RawMessage `yaml:"-"`
	// KwargsNode receives the YAML mapping; Load converts it to ChatTemplateKwargs.
	KwargsNode yaml.Node `yaml:"chat_template_kwargs"`
	// CacheSalt pins vLLM's cache_salt for this model; empty derives one per tenant.
	CacheSalt string `yaml:"cache_salt"`
}

// Store configures where checkpoints (the durable record of responses) live.
type Store struct {
	// DataDir holds the embedded store. Default "./stitch-data". With Redis it keeps this pod's copy
	// of every checkpoint it wrote, read while Redis is unavailable.
	DataDir string `yaml:"data_dir"`
	// Redis is a redis:// URL; when set, checkpoints and artifacts are shared through it (multi-pod).
	Redis Secret `yaml:"redis"`
	// ResponseTTL is how long stored responses are kept: the Redis TTL, and the embedded store's
	// retention (swept hourly). Default 720h (30 days).
	ResponseTTL time.Duration `yaml:"response_ttl"`
}

// Artifacts configures the token-artifact fast path.
type Artifacts struct {
	// Disabled turns the fast path off: full render every turn (the baseline). Default false.
	Disabled bool `yaml:"disabled"`
	// Mode is "canonical" (default: ids equal a full render) or "exact" (history frozen as generated).
	Mode string `yaml:"mode"`
	// CacheMB bounds the local (L1) artifact cache in MiB. Default 256.
	CacheMB int `yaml:"cache_mb"`
	// HotMB bounds the in-process hot cache in MiB: the last turn's prompt text, template render
	// memo and prompt encoding per recent conversation (three quarters), and parsed conversation
	// items (one quarter), which let a continuation cost the new turn only. 0 turns it off.
	// Default 256.
	HotMB int `yaml:"hot_mb"`
	// TTL is an artifact's lifetime. Default 1h.
	TTL time.Duration `yaml:"ttl"`
	// AuditRate is the fraction of fast-path continuations re-tokenized in full in the background and
	// compared. Default 0.01.
	AuditRate float64 `yaml:"audit_rate"`
}

// Auth configures tenants and sealing keys.
type Auth struct {
	// APIKeysFile is a JSON list [{"tenant":…,"key_sha256":…}]; reloaded on change. Empty: one tenant
	// ("default"), any or no key accepted (dev mode).
	APIKeysFile string `yaml:"api_keys_file"`
	// SealKeysFile is a JSON list [{"id":…,"secret":"<base64>"}]; the first signs, all verify.
	// Empty: a random key per process (artifacts then do not survive a restart or cross pods).
	SealKeysFile string `yaml:"seal_keys_file"`
	// CacheSaltSecret keys the per-tenant cache_salt derivation. Empty: the first seal key's
	// secret (then rotating seal keys also empties every tenant's prefix cache).
	CacheSaltSecret Secret `yaml:"cache_salt_secret"`
}

// Log configures log/slog output.
type Log struct {
	// Format is "text" (default) or "json".
	Format string `yaml:"format"`
	// Level is "debug", "info" (default), "warn" or "error".
	Level string `yaml:"level"`
}

// Sim configures the built-in simulator used when Upstream.URL is empty.
type Sim struct {
	// Fast turns the simulator's latency model off (no sleeps). Default false.
	Fast bool `yaml:"fast"`
	// Seed makes the simulator's answers reproducible. Default 1.
	Seed int64 `yaml:"seed"`
}

// Secret is a string that never appears in logs.
type Secret string

// LogValue redacts the secret for log/slog.
func (s Secret) LogValue() slog.Value {
	if s == "" {
		return slog.StringValue("")
	}
	return slog.StringValue("[redacted]")
}
