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

	"github.com/stitchllm/stitch/family"
	"github.com/stitchllm/stitch/prepare"
	"github.com/stitchllm/stitch/render"
	"github.com/stitchllm/stitch/server"
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
	server.Upstream
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

var _ server.Upstream = (*countingUpstream)(nil)

// proxy is one mode's stitch server, assembled as `stitch serve` assembles it
// (server.NewArtifacts, server.NewModelRuntime with serve's default cache sizes), with an
// in-memory checkpoint store instead of bbolt on disk, a random seal key, and a preparation
// recorder around the model's engine.
type proxy struct {
	url    string
	hs     *http.Server
	up     *countingUpstream
	rec    *prepRecorder
	timing prepare.Engine // the same engine without background audits, for the timing pass
	stop   []uint32       // the model's stop_token_ids
	arts   *server.Artifacts
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
	reg := prometheus.NewRegistry()
	salt := func(tenant string) string { return "bench-" + tenant } // stable per tenant, as stitch's HMAC salt is
	var checkpoints store.Checkpoints = store.NewMemory()
	if o.checkpoints != nil {
		checkpoints = o.checkpoints
	}
	mc := server.ModelConfig{Name: o.w.Model, Render: o.model, MaxModelLen: o.w.MaxModelLen, CacheSalt: salt,
		Family: o.family}
	mc.Family = mc.Family.WithDefaults()
	if o.harmony != nil {
		mc.Family, mc.Harmony = family.HarmonyNames(), o.harmony
	}
	timing := mc
	var hotCopy, hotDrop func(tenant, id string)
	if o.mode != ModeFull {
		secret := o.sealSecret
		if secret == nil {
			secret = make([]byte, 32)
			_, _ = rand.Read(secret)
		}
		var sealer *store.Sealer
		sealer, err = store.NewSealer([]store.SealKey{{ID: "bench", Secret: secret}}, store.SealerOptions{})
		if err != nil {
			return nil, fmt.Errorf("sealer: %w", err)
		}
		if mc.Mode, err = store.ParseMode(string(o.mode)); err != nil {
			return nil, err
		}
		var l2 store.PortableCache
		if o.redis != nil {
			prefix := o.redisPrefix
			if prefix == "" {
				prefix = "bench-" + string(o.mode) + "-" + string(o.transport)
			}
			l2 = store.NewRedisArtifacts(o.redis, store.RedisArtifactsOptions{Prefix: prefix})
		}
		// stitch serve's defaults: --artifact-cache-mb 256, --artifact-hot-mb 256, --artifact-ttl 1h.
		if p.arts, err = server.NewArtifacts(server.ArtifactsConfig{Sealer: sealer, CacheMB: benchCacheMB, HotMB: benchHotMB, TTL: time.Hour, L2: l2,
			AuditRate: o.auditRate, Checkpoints: checkpoints, Logger: o.logger, Registry: reg}); err != nil {
			return nil, err
		}
		p.store, mc.Artifacts = p.arts.Tiers, p.arts
		// The timing engine shares the stores and caches, without audits and with metrics of its own.
		quiet := *p.arts
		quiet.AuditRate, quiet.Metrics = 0, prepare.NewArtifactMetrics(prometheus.NewRegistry())
		// The workload's hot cache retires an entry once the next turn committed, and the timing
		// pass prepares those next turns again: the recorder copies the entry each sampled turn
		// was prepared from into the timing engine's own hot cache, where nothing retires it.
		if p.arts.Hot != nil {
			quiet.Hot = prepare.NewHotArtifacts(benchHotMB<<20*3/4, nil)
			live, held := p.arts.Hot, quiet.Hot
			p.held = held
			hotCopy = func(tenant, id string) { live.CopyTo(held, tenant, id) }
			hotDrop = held.Forget
		}
		timing.Mode, timing.Artifacts = mc.Mode, &quiet
	}
	rt, err := server.NewModelRuntime(mc)
	if err != nil {
		p.close()
		return nil, err
	}
	trt, err := server.NewModelRuntime(timing)
	if err != nil {
		p.close()
		return nil, err
	}
	p.timing, p.stop = trt.Engine, rt.Family.StopTokenIDs()
	p.rec = newPrepRecorder(rt.Engine, o.w.Seed)
	p.rec.hotCopy, p.rec.hotDrop = hotCopy, hotDrop
	rt.Engine = p.rec
	srv, err := server.New(server.Options{
		Logger: o.logger, Registry: reg, Upstream: p.up, Models: map[string]*server.ModelRuntime{o.w.Model: rt},
		Checkpoints: checkpoints,
	})
	if err != nil {
		p.close()
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.close()
		return nil, fmt.Errorf("listen: %w", err)
	}
	p.handled = make(chan struct{}, 1)
	p.hs = &http.Server{Handler: withTurn(srv, p.handled), ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.hs.Serve(ln) }()
	p.url = "http://" + ln.Addr().String()
	return p, nil
}

func (p *proxy) close() {
	if p.hs != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_ = p.hs.Shutdown(ctx)
		cancel()
	}
	if p.arts != nil {
		_ = p.arts.Close()
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
