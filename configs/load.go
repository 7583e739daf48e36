package configs

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/stitchllm/stitch/internal/continuation"
)

// Default returns the configuration with every default applied.
func Default() *Config {
	return &Config{
		Server: Server{
			Listen:              ":8080",
			MaxBodyBytes:        32 << 20,
			MaxInputItems:       10000,
			UpstreamMetricsPath: "/vllm/metrics",
			ShutdownTimeout:     30 * time.Second,
			BackgroundLease:     30 * time.Second,
			MaxJSONDepth:        128,
			// A vLLM on one GPU runs a few hundred sequences at once (max_num_seqs); more only
			// queue there, holding memory here.
			MaxConcurrentResponses: 512,
			BodyReadTimeout:        60 * time.Second,
			MaxInflightBodyMB:      256,
			WriteTimeout:           60 * time.Second,
		},
		Upstream:  Upstream{Timeout: 120 * time.Second, IdleTimeout: 60 * time.Second},
		Store:     Store{DataDir: "./stitch-data", ResponseTTL: 720 * time.Hour},
		Artifacts: Artifacts{Mode: "canonical", CacheMB: 256, HotMB: 256, TTL: time.Hour, AuditRate: 0.01},
		Log:       Log{Format: "text", Level: "info"},
		Sim:       Sim{Seed: 1},
	}
}

// option binds one flag (and its STITCH_ environment variable) to a field of Config.
type option struct {
	name  string
	usage string
	value func(c *Config) flag.Value
}

// single-model flags: they fill (or create) Models[0].
type singleModel struct {
	dir, name, toolCallParser, reasoningParser, chatTemplate string
}

func options(sm *singleModel) []option {
	return []option{
		{"listen", "address to serve on", func(c *Config) flag.Value { return (*stringValue)(&c.Server.Listen) }},
		{"upstream", "vLLM base URL (no /v1), or grpc://host:port for vLLM's gRPC engine API (vllm serve --grpc); empty runs the built-in simulator with the demo model", func(c *Config) flag.Value { return (*stringValue)(&c.Upstream.URL) }},
		{"upstream-api-key", "Bearer key sent to vLLM (vLLM --api-key)", func(c *Config) flag.Value { return (*secretValue)(&c.Upstream.APIKey) }},
		{"max-model-len", "context length; 0 reads it from the upstream's /v1/models", func(c *Config) flag.Value { return (*intValue)(&c.Upstream.MaxModelLen) }},
		{"model-dir", "model directory (tokenizer.json, tokenizer_config.json); empty: bundled Qwen3 demo model", func(*Config) flag.Value { return (*stringValue)(&sm.dir) }},
		{"served-model-name", "model name clients send (and vLLM serves); default qwen3", func(*Config) flag.Value { return (*stringValue)(&sm.name) }},
		{"tool-call-parser", "vLLM's --tool-call-parser of the model (selects its family); default hermes", func(*Config) flag.Value { return (*stringValue)(&sm.toolCallParser) }},
		{"reasoning-parser", "vLLM's --reasoning-parser of the model (selects its family); default qwen3", func(*Config) flag.Value { return (*stringValue)(&sm.reasoningParser) }},
		{"chat-template", "Jinja chat template file that replaces the model directory's (vLLM's --chat-template: its tool templates for DeepSeek V3/V3.1 and Gemma 3)", func(*Config) flag.Value { return (*stringValue)(&sm.chatTemplate) }},
		{"data-dir", "directory of the embedded response store", func(c *Config) flag.Value { return (*stringValue)(&c.Store.DataDir) }},
		{"redis", "redis:// URL for shared checkpoints and artifacts (multi-pod)", func(c *Config) flag.Value { return (*secretValue)(&c.Store.Redis) }},
		{"response-ttl", "how long stored responses live (Redis TTL; the embedded store sweeps hourly)", func(c *Config) flag.Value { return (*durationValue)(&c.Store.ResponseTTL) }},
		{"mode", "continuation mode: canonical or exact", func(c *Config) flag.Value { return (*stringValue)(&c.Artifacts.Mode) }},
		{"no-artifacts", "disable token artifacts: full render every turn", func(c *Config) flag.Value { return (*boolValue)(&c.Artifacts.Disabled) }},
		{"artifact-cache-mb", "local artifact cache size in MiB", func(c *Config) flag.Value { return (*intValue)(&c.Artifacts.CacheMB) }},
		{"artifact-hot-mb", "in-process cache of recent prompts (text, render memo, encoding) in MiB; 0: off", func(c *Config) flag.Value { return (*intValue)(&c.Artifacts.HotMB) }},
		{"artifact-ttl", "artifact lifetime", func(c *Config) flag.Value { return (*durationValue)(&c.Artifacts.TTL) }},
		{"audit-rate", "fraction of fast-path continuations re-tokenized in full and compared", func(c *Config) flag.Value { return (*floatValue)(&c.Artifacts.AuditRate) }},
		{"api-keys", "JSON file of tenants' API key digests; empty: dev mode, one tenant", func(c *Config) flag.Value { return (*stringValue)(&c.Auth.APIKeysFile) }},
		{"seal-keys", "JSON file of sealing keys; empty: a random key per process", func(c *Config) flag.Value { return (*stringValue)(&c.Auth.SealKeysFile) }},
		{"max-body-bytes", "largest accepted request body", func(c *Config) flag.Value { return (*int64Value)(&c.Server.MaxBodyBytes) }},
		{"upstream-metrics-path", "path of stitch's port that serves vLLM's own /metrics (for a router's scraper); empty: off", func(c *Config) flag.Value { return (*stringValue)(&c.Server.UpstreamMetricsPath) }},
		{"max-input-items", "most input items in one request", func(c *Config) flag.Value { return (*intValue)(&c.Server.MaxInputItems) }},
		{"shutdown-timeout", "how long shutdown waits for open streams", func(c *Config) flag.Value { return (*durationValue)(&c.Server.ShutdownTimeout) }},
		{"background-lease", "a background response's owner lease; past it, one whose replica died reads failed", func(c *Config) flag.Value { return (*durationValue)(&c.Server.BackgroundLease) }},
		{"max-json-depth", "deepest nesting of arrays and objects accepted in a request body", func(c *Config) flag.Value { return (*intValue)(&c.Server.MaxJSONDepth) }},
		{"max-concurrent-responses", "generations in flight at most; beyond it 429 with Retry-After (0: unbounded)", func(c *Config) flag.Value { return (*intValue)(&c.Server.MaxConcurrentResponses) }},
		{"body-read-timeout", "how long a client may take to send its request body", func(c *Config) flag.Value { return (*durationValue)(&c.Server.BodyReadTimeout) }},
		{"max-inflight-body-mb", "request body MiB all running requests may hold together; beyond it 429 (0: unbounded)", func(c *Config) flag.Value { return (*intValue)(&c.Server.MaxInflightBodyMB) }},
		{"write-timeout", "bound on each write to a client (a client that stops reading is dropped)", func(c *Config) flag.Value { return (*durationValue)(&c.Server.WriteTimeout) }},
		{"memory-limit-mb", "Go runtime soft memory limit in MiB; 0: 90% of the cgroup limit, if any", func(c *Config) flag.Value { return (*intValue)(&c.Server.MemoryLimitMB) }},
		{"upstream-timeout", "wait for a generation's first byte from vLLM (then 504)", func(c *Config) flag.Value { return (*durationValue)(&c.Upstream.Timeout) }},
		{"upstream-idle-timeout", "longest gap between two chunks of a vLLM stream (then response.failed)", func(c *Config) flag.Value { return (*durationValue)(&c.Upstream.IdleTimeout) }},
		{"cache-salt-secret", "secret keying per-tenant cache_salt; empty: the first seal key", func(c *Config) flag.Value { return (*secretValue)(&c.Auth.CacheSaltSecret) }},
		{"log-format", "text or json", func(c *Config) flag.Value { return (*stringValue)(&c.Log.Format) }},
		{"log-level", "debug, info, warn or error", func(c *Config) flag.Value { return (*stringValue)(&c.Log.Level) }},
		{"sim-fast", "built-in simulator: no latency sleeps", func(c *Config) flag.Value { return (*boolValue)(&c.Sim.Fast) }},
		{"sim-seed", "built-in simulator: seed of the scripted model", func(c *Config) flag.Value { return (*int64Value)(&c.Sim.Seed) }},
	}
}

// FlagNames lists every flag Load accepts (including --config), for documentation checks.
func FlagNames() []string {
	names := []string{"config"}
	for _, o := range options(&singleModel{}) {
		names = append(names, o.name)
	}
	return names
}

// EnvName is the environment variable for a flag: STITCH_ + upper case, dashes as underscores.
func EnvName(flagName string) string {
	return "STITCH_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// Load builds the configuration from defaults, the --config YAML file, STITCH_* environment
// variables (looked up with getenv) and the flags in args, validates it and returns it.
// On --help it prints usage to out and returns flag.ErrHelp.
func Load(name string, args []string, getenv func(string) string, out io.Writer) (*Config, error) {
	cfg := Default()
	var sm singleModel
	opts := options(&sm)

	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(out)
	configPath := getenv(EnvName("config"))
	fs.StringVar(&configPath, "config", configPath, "YAML configuration file (model profiles live only here)")
	for _, o := range opts {
		fs.Var(o.value(cfg), o.name, o.usage+" (env "+EnvName(o.name)+")")
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s [flags]\n\nFlags (precedence: flag > STITCH_* env > --config file > default):\n", name)
		fs.PrintDefaults()
	}
	// First pass: find --config only, so the file can be applied beneath env and flags.
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	cfg = Default()
	sm = singleModel{}
	if configPath != "" {
		data, err := os.ReadFile(configPath)
		if err != nil {
			return nil, fmt.Errorf("read config: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(data))
		dec.KnownFields(true)
		if err := dec.Decode(cfg); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("parse config %s: %w", configPath, err)
		}
	}
	for _, o := range opts {
		if v := getenv(EnvName(o.name)); v != "" {
			if err := o.value(cfg).Set(v); err != nil {
				return nil, fmt.Errorf("env %s: %w", EnvName(o.name), err)
			}
		}
	}
	// Second pass: flags over file and env.
	fs2 := flag.NewFlagSet(name, flag.ContinueOnError)
	fs2.SetOutput(io.Discard)
	fs2.String("config", "", "")
	for _, o := range opts {
		fs2.Var(o.value(cfg), o.name, o.usage)
	}
	if err := fs2.Parse(args); err != nil {
		return nil, err
	}
	if err := applySingleModel(cfg, sm); err != nil {
		return nil, err
	}
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

func applySingleModel(cfg *Config, sm singleModel) error {
	if len(cfg.Models) == 0 {
		cfg.Models = []ModelProfile{{}}
	}
	if len(cfg.Models) > 1 && (sm.dir != "" || sm.name != "" || sm.toolCallParser != "" || sm.reasoningParser != "" || sm.chatTemplate != "") {
		return errors.New("--model-dir, --served-model-name, --tool-call-parser, --reasoning-parser and --chat-template describe one model; the config file lists several")
	}
	if sm.toolCallParser != "" {
		cfg.Models[0].ToolCallParser = sm.toolCallParser
	}
	if sm.reasoningParser != "" {
		cfg.Models[0].ReasoningParser = sm.reasoningParser
	}
	if sm.chatTemplate != "" {
		cfg.Models[0].ChatTemplate = sm.chatTemplate
	}
	if sm.dir != "" {
		cfg.Models[0].Dir = sm.dir
	}
	if sm.name != "" {
		cfg.Models[0].Name = sm.name
	}
	return nil
}

// normalize fills per-model defaults and converts YAML kwargs to ordered JSON.
func (c *Config) normalize() error {
	for i := range c.Models {
		m := &c.Models[i]
		if m.Name == "" {
			m.Name = "qwen3"
		}
		// Empty parser names stay empty: package family fills in its default family
		// (family.Names.WithDefaults), the one place it is named.
		if m.Mode == "" {
			m.Mode = c.Artifacts.Mode
		}
		m.ContinuationMode, _ = continuation.Parse(m.Mode) // Validate reports a bad one
		if m.KwargsNode.Kind != 0 {
			js, err := nodeJSON(&m.KwargsNode)
			if err != nil {
				return fmt.Errorf("models[%d].chat_template_kwargs: %w", i, err)
			}
			m.ChatTemplateKwargs = js
		}
	}
	return nil
}

// Validate reports every problem of c at once.
func (c *Config) Validate() error {
	var errs []error
	if c.Server.Listen == "" {
		errs = append(errs, errors.New("listen: empty"))
	}
	if c.Server.MaxBodyBytes <= 0 {
		errs = append(errs, errors.New("max-body-bytes: must be positive"))
	}
	if p := c.Server.UpstreamMetricsPath; p != "" && (p[0] != '/' || p == "/metrics") {
		errs = append(errs, errors.New("upstream-metrics-path: must start with / and not be /metrics"))
	}
	if c.Server.MaxInputItems <= 0 {
		errs = append(errs, errors.New("max-input-items: must be positive"))
	}
	if c.Upstream.URL != "" {
		if u, err := url.Parse(c.Upstream.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "grpc") || u.Host == "" {
			errs = append(errs, fmt.Errorf("upstream: %q is not an http(s) URL or grpc://host:port", c.Upstream.URL))
		}
	}
	if c.Upstream.MaxModelLen < 0 {
		errs = append(errs, errors.New("max-model-len: negative"))
	}
	errs = append(errs, c.validateLimits()...)
	if _, err := continuation.Parse(c.Artifacts.Mode); err != nil {
		errs = append(errs, fmt.Errorf("mode: %w", err))
	}
	seen := map[string]bool{}
	for i, m := range c.Models {
		if seen[m.Name] {
			errs = append(errs, fmt.Errorf("models[%d]: duplicate name %q", i, m.Name))
		}
		seen[m.Name] = true
		if _, err := continuation.Parse(m.Mode); err != nil {
			errs = append(errs, fmt.Errorf("models[%d].mode: %w", i, err))
		}
		// Parser names select a model family (package family); stitch serve refuses an unknown
		// pair at startup, listing the supported ones.
		if m.CacheSalt != "" {
			if err := CheckCacheSalt(m.CacheSalt); err != nil {
				errs = append(errs, fmt.Errorf("models[%d].cache_salt: %w", i, err))
			}
		}
		if len(m.ChatTemplateKwargs) > 0 && !bytes.HasPrefix(bytes.TrimSpace(m.ChatTemplateKwargs), []byte("{")) {
			errs = append(errs, fmt.Errorf("models[%d].chat_template_kwargs: not a mapping", i))
		}
	}
	if c.Artifacts.CacheMB <= 0 {
		errs = append(errs, errors.New("artifact-cache-mb: must be positive"))
	}
	if c.Artifacts.HotMB < 0 {
		errs = append(errs, errors.New("artifact-hot-mb: must not be negative"))
	}
	if c.Artifacts.TTL <= 0 {
		errs = append(errs, errors.New("artifact-ttl: must be positive"))
	}
	if c.Artifacts.AuditRate < 0 || c.Artifacts.AuditRate > 1 {
		errs = append(errs, errors.New("audit-rate: must be within [0, 1]"))
	}
	if c.Store.ResponseTTL <= 0 {
		errs = append(errs, errors.New("response-ttl: must be positive"))
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		errs = append(errs, fmt.Errorf("log-format: %q is not text or json", c.Log.Format))
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log-level: %q is not debug, info, warn or error", c.Log.Level))
	}
	return errors.Join(errs...)
}

// nodeJSON converts a YAML node to JSON, keeping mapping order and scalar spelling
// (YAML's integers and floats pass through as written; booleans and null as JSON's).
func nodeJSON(n *yaml.Node) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := writeNodeJSON(&buf, n); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeNodeJSON(buf *bytes.Buffer, n *yaml.Node) error {
	switch n.Kind {
	case yaml.DocumentNode:
		if len(n.Content) == 0 {
			buf.WriteString("null")
			return nil
		}
		return writeNodeJSON(buf, n.Content[0])
	case yaml.MappingNode:
		buf.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(n.Content[i].Value)
			buf.Write(k)
			buf.WriteByte(':')
			if err := writeNodeJSON(buf, n.Content[i+1]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	case yaml.SequenceNode:
		buf.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeNodeJSON(buf, c); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case yaml.ScalarNode:
		switch n.Tag {
		case "!!null":
			buf.WriteString("null")
		case "!!bool":
			b, err := strconv.ParseBool(n.Value)
			if err != nil {
				return fmt.Errorf("line %d: bad boolean %q", n.Line, n.Value)
			}
			buf.WriteString(strconv.FormatBool(b))
		case "!!int", "!!float":
			if !json.Valid([]byte(n.Value)) {
				return fmt.Errorf("line %d: number %q has no JSON spelling", n.Line, n.Value)
			}
			buf.WriteString(n.Value)
		default:
			s, _ := json.Marshal(n.Value)
			buf.Write(s)
		}
	case yaml.AliasNode:
		return writeNodeJSON(buf, n.Alias)
	default:
		return fmt.Errorf("line %d: unsupported YAML node", n.Line)
	}
	return nil
}

type stringValue string

func (v *stringValue) Set(s string) error { *v = stringValue(s); return nil }
func (v *stringValue) String() string     { return string(*v) }

type secretValue Secret

func (v *secretValue) Set(s string) error { *v = secretValue(s); return nil }
func (v *secretValue) String() string {
	if *v == "" {
		return ""
	}
	return "[redacted]"
}

type intValue int

func (v *intValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = intValue(n)
	return nil
}
func (v *intValue) String() string { return strconv.Itoa(int(*v)) }

type int64Value int64

func (v *int64Value) Set(s string) error {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("%q is not an integer", s)
	}
	*v = int64Value(n)
	return nil
}
func (v *int64Value) String() string { return strconv.FormatInt(int64(*v), 10) }

type floatValue float64

func (v *floatValue) Set(s string) error {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return fmt.Errorf("%q is not a number", s)
	}
	*v = floatValue(f)
	return nil
}
func (v *floatValue) String() string { return strconv.FormatFloat(float64(*v), 'g', -1, 64) }

type boolValue bool

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("%q is not a boolean", s)
	}
	*v = boolValue(b)
	return nil
}
func (v *boolValue) String() string   { return strconv.FormatBool(bool(*v)) }
func (v *boolValue) IsBoolFlag() bool { return true }

type durationValue time.Duration

func (v *durationValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is not a duration (e.g. 30s, 1h)", s)
	}
	*v = durationValue(d)
	return nil
}
func (v *durationValue) String() string { return time.Duration(*v).String() }
