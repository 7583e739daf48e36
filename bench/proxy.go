package bench

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/stitchllm/stitch/configs"
	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/stack"
	"github.com/stitchllm/stitch/store"
)

// Mode is a continuation mode under test.
type Mode string

// The three modes compared (issue 8).
const (
	// ModeFull renders and tokenizes the whole conversation every turn (stitch serve
	// --no-artifacts; what vLLM's own chat path does).
	ModeFull Mode = "full"
	// ModeCanonical reuses token artifacts and tokenizes only the certified suffix; ids equal a
	// full render.
	ModeCanonical Mode = "canonical"
	// ModeExact freezes history as prompt plus generated ids.
	ModeExact Mode = "exact"
)

// ParseMode reads a mode name: "full", or a continuation mode store.ParseMode reads.
func ParseMode(s string) (Mode, error) {
	if Mode(s) == ModeFull {
		return ModeFull, nil
	}
	if _, err := store.ParseMode(s); err != nil {
		return "", fmt.Errorf("%w: unknown mode %q (want full, canonical or exact)", ErrBadOptions, s)
	}
	return Mode(s), nil
}

// countingUpstream counts the bytes the proxy sends to the upstream's completions endpoint: the
// JSON bodies on HTTP; on gRPC the GenerateRequest messages (counted by the client's interceptor,
// see transport.go), the JSON the server hands the adapter being no upstream traffic.
type countingUpstream struct {
	stack.Upstream
	sent  atomic.Int64
	grpc  *grpcCapture // nil on HTTP
	close func()

	// keepLast, set before the first request, keeps the last body sent on HTTP in last, for the
	// streaming comparison's reverse proxy (the workloads' bodies are not copied).
	keepLast bool
	lastMu   sync.Mutex
	last     []byte
}

func (c *countingUpstream) Completions(ctx context.Context, body [][]byte) (io.ReadCloser, error) {
	if c.grpc != nil {
		return c.grpc.capture(ctx, func(ctx context.Context) (io.ReadCloser, error) { return c.Upstream.Completions(ctx, body) },
			func() []byte { return bytes.Join(body, nil) })
	}
	for _, p := range body {
		c.sent.Add(int64(len(p)))
	}
	if c.keepLast {
		c.lastMu.Lock()
		c.last = bytes.Join(body, nil)
		c.lastMu.Unlock()
	}
	return c.Upstream.Completions(ctx, body)
}

// lastBody returns the last completions body sent on HTTP (nil: none yet).
func (c *countingUpstream) lastBody() []byte {
	c.lastMu.Lock()
	defer c.lastMu.Unlock()
	return c.last
}

var _ stack.Upstream = (*countingUpstream)(nil)

// proxy is one mode's stitch server, assembled by stack.Open as `stitch serve` assembles it
// (serve's defaults: artifact cache and hot cache sizes, limits), with an in-memory checkpoint
// store instead of bbolt on disk, a random seal key, a per-tenant cache salt of its own, and a
// preparation recorder around the model's engine.
type proxy struct {
	url    string
	hs     *http.Server
	st     *stack.Stack
	up     *countingUpstream
	rec    *prepRecorder
	timing prepare.Engine // the same engine without background audits, for the timing pass
	stop   []uint32       // the model's stop_token_ids
	arts   *stack.Artifacts
	store  *store.Tiered // the artifact store (nil in full mode)
	// held is the timing engine's hot cache, holding the entries of the sampled turns' previous
	// responses (nil in full mode); the turn pass copies them back into the live cache.
	held *prepare.HotArtifacts
	// model is the served model (its tokenizer times prep_bound); l2 whether the store has Redis.
	model *render.Renderer
	l2    bool
	// handled receives one value each time a replayed turn's handler returns (turn.go): the turn
	// pass's CPU window closes after the server's work for the turn, not at its last byte.
	handled chan struct{}
}

// proxyOptions are what newProxy needs besides the mode.
type proxyOptions struct {
	mode      Mode
	model     *render.Renderer
	harmony   *prepare.Harmony // gpt-oss: Harmony prompts and the openai family
	family    family.Names     // zero: Qwen3 (hermes + qwen3)
	upstream  string
	transport Transport
	grpcAddr  string // the simulator's gRPC engine API, for TransportGRPC
	w         Workload
	auditRate float64
	logger    *slog.Logger
	// redis, when set, is the portable artifact tier (a key prefix per mode and transport, or
	// redisPrefix when set).
	redis       redis.UniversalClient
	redisPrefix string
	// checkpoints, when set, is the checkpoint store, shared by a fleet's replicas (default: one
	// in-memory store of the proxy's own); sealSecret the artifact sealing key every replica of a
	// fleet shares (default: a random one).
	checkpoints store.Checkpoints
	sealSecret  []byte
}

func newProxy(o proxyOptions) (*proxy, error) {
	if o.logger == nil {
		o.logger = slog.New(slog.DiscardHandler)
	}
	p := &proxy{model: o.model, l2: o.redis != nil && o.mode != ModeFull}
	var err error
	if p.up, err = newCountingUpstream(o); err != nil {
		return nil, err
	}
	sc, mc, err := proxyConfig(o)
	if err != nil {
		p.close()
		return nil, err
	}
	sc.Upstream = p.up
	sc.WrapEngine = func(_ string, e prepare.Engine) prepare.Engine {
		p.rec = newPrepRecorder(e, o.w.Seed)
		return p.rec
	}
	if p.st, err = stack.Open(context.Background(), sc); err != nil {
		p.close()
		return nil, err
	}
	rt := p.st.Runtimes[o.w.Model]
	p.stop = rt.Family.StopTokenIDs()
	timing := mc
	if p.arts = p.st.Artifacts; p.arts != nil {
		p.store = p.arts.Tiers
		// The timing engine shares the stores and caches, without audits and with metrics of its own.
		quiet := *p.arts
		quiet.AuditRate, quiet.Metrics = 0, prepare.NewArtifactMetrics(prometheus.NewRegistry())
		// The workload's hot cache retires an entry once the next turn committed, and the timing
		// pass prepares those next turns again: the recorder copies the entry each sampled turn
		// was prepared from into the timing engine's own hot cache, where nothing retires it.
		if p.arts.Hot != nil {
			quiet.Hot = prepare.NewHotArtifacts(int64(sc.Settings.Artifacts.HotMB)<<20*3/4, nil)
			live, held := p.arts.Hot, quiet.Hot
			p.held = held
			p.rec.hotCopy = func(tenant, id string) { live.CopyTo(held, tenant, id) }
			p.rec.hotDrop = held.Forget
		}
		timing.Artifacts = &quiet
	}
	trt, err := stack.NewModelRuntime(timing)
	if err != nil {
		p.close()
		return nil, err
	}
	p.timing = trt.Engine
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	p.handled = make(chan struct{}, 1)
	p.hs = &http.Server{Handler: withTurn(p.st.Server, p.handled), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.hs.Serve(ln) }()
	p.url = "http://" + ln.Addr().String()
	return p, nil
}

// proxyConfig is the stack a mode runs on: stitch serve's settings with the workload's model,
// the mode, the audit rate and the bench's stores; and the model's configuration, from which the
// timing engine is built beside the stack's.
func proxyConfig(o proxyOptions) (stack.Config, stack.ModelConfig, error) {
	settings := configs.Default()
	settings.Upstream.MaxModelLen = o.w.MaxModelLen
	settings.Artifacts.AuditRate = o.auditRate
	settings.Artifacts.CacheMB, settings.Artifacts.HotMB = benchCacheMB, benchHotMB // memory.go's bound reads them
	settings.Artifacts.Disabled = o.mode == ModeFull
	profile := configs.ModelProfile{Name: o.w.Model}
	if o.mode != ModeFull {
		var err error
		if profile.ContinuationMode, err = store.ParseMode(string(o.mode)); err != nil {
			return stack.Config{}, stack.ModelConfig{}, err
		}
	}
	settings.Models = []configs.ModelProfile{profile}
	salt := func(tenant string) string { return "bench-" + tenant } // stable per tenant, as stitch's HMAC salt is
	mc := stack.ModelConfig{Name: o.w.Model, Render: o.model, MaxModelLen: o.w.MaxModelLen, CacheSalt: salt,
		Family: o.family.WithDefaults(), Mode: profile.ContinuationMode}
	if o.harmony != nil {
		mc.Family, mc.Harmony = family.HarmonyNames(), o.harmony
	}
	sc := stack.Config{Settings: settings, Logger: o.logger, Checkpoints: o.checkpoints,
		Models:    map[string]stack.Model{o.w.Model: {Render: o.model, Harmony: mc.Harmony, Family: mc.Family}},
		CacheSalt: func(tenant, _ string) string { return salt(tenant) }}
	if sc.Checkpoints == nil {
		sc.Checkpoints = store.NewMemory()
	}
	secret := o.sealSecret
	if secret == nil {
		secret = make([]byte, 32)
		_, _ = rand.Read(secret)
	}
	sc.SealKeys = []store.SealKey{{ID: "bench", Secret: secret}}
	if o.redis != nil && o.mode != ModeFull {
		prefix := o.redisPrefix
		if prefix == "" {
			prefix = "bench-" + string(o.mode) + "-" + string(o.transport)
		}
		sc.ArtifactL2 = store.NewRedisArtifacts(o.redis, store.RedisArtifactsOptions{Prefix: prefix})
	}
	return sc, mc, nil
}

func (p *proxy) close() {
	if p.hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.hs.Shutdown(ctx)
		cancel()
	}
	if p.st != nil {
		_ = p.st.Close()
	}
	p.up.HTTPClient().CloseIdleConnections()
	if p.up.close != nil {
		p.up.close()
	}
}

// turnKey names a workload turn.
type turnKey struct{ session, turn int }

type turnCtxKey struct{}

// withTurn puts the driver's turn header into the request context, where the preparation
// recorder finds it (the server passes the request context to Prepare). A replayed turn (the turn
// pass's replayHeader) signals handled, when not nil, once the server's handler returned.
func withTurn(next http.Handler, handled chan<- struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if handled != nil && r.Header.Get(replayHeader) != "" {
			defer func() {
				select {
				case handled <- struct{}{}:
				default:
				}
			}()
		}
		if s, t, ok := strings.Cut(r.Header.Get(turnHeader), "/"); ok {
			si, err1 := strconv.Atoi(s)
			ti, err2 := strconv.Atoi(t)
			if err1 == nil && err2 == nil {
				r = r.WithContext(context.WithValue(r.Context(), turnCtxKey{}, turnKey{si, ti}))
			}
		}
		next.ServeHTTP(w, r)
	})
}

func turnFrom(ctx context.Context) (turnKey, bool) {
	k, ok := ctx.Value(turnCtxKey{}).(turnKey)
	return k, ok
}
