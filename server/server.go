package server

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// Upstream is the part of the vLLM client the server calls.
type Upstream interface {
	Completions(ctx context.Context, body [][]byte) (io.ReadCloser, error)
	Health(ctx context.Context) error
	BaseURL() string
	HTTPClient() *http.Client
}

// Options configure a Server. Logger, Registry, Upstream, Checkpoints and at least one Model are required.
type Options struct {
	Logger   *slog.Logger
	Registry *prometheus.Registry
	Upstream Upstream
	// Models maps served model names to their runtime.
	Models map[string]*ModelRuntime
	// Checkpoints is the durable response store (store.Bolt, store.RedisCheckpoints, store.Fallback,
	// store.Memory).
	Checkpoints store.Checkpoints
	// Auth maps API keys to tenants; nil means dev mode (one tenant, any key).
	Auth middleware.Authenticator
	// MaxBodyBytes caps request bodies (default 32 MiB); MaxInputItems caps input items (default 10000).
	MaxBodyBytes  int64
	MaxInputItems int
	// UpstreamMetricsPath, when set, serves the model server's GET /metrics on this path of
	// stitch's port (upstream_metrics.go), for routers that scrape each endpoint's port. Empty:
	// not served.
	UpstreamMetricsPath string
	// Reseed, when set, seals reasoning items' encrypted_content for clients that ask for it and
	// resolves artifacts from replayed histories (stateless clients). Nil: no encrypted_content.
	Reseed *Reseeder
	// NewID makes ids with a prefix ("resp", "msg", …); default: 24 random bytes in hex.
	NewID func(prefix string) string
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Limits bound what one request may cost (limits.go, admission.go).
	Limits Limits
	// Runs keeps background responses (their state and event logs); share one over Redis
	// between replicas. Nil: in process memory (store.MemoryRecords).
	Runs *store.Runs
	// Conversations keeps the Conversations API's conversations; share one over Redis between
	// replicas. Nil: in process memory.
	Conversations *store.Conversations
	// Instance names this process as the owner of the background responses it generates.
	// Empty: a random name.
	Instance string
	// CacheSalt returns the cache_salt of a tenant for any model a pass-through generation names
	// (the salt is always set, whatever the client sent). Nil: the served model's salter, else a
	// digest of tenant and model.
	CacheSalt func(tenant, model string) string
	// StoreReady, when set, is part of /readyz: an error (Redis answers no commands) makes the pod
	// not ready. It must be cheap (store.RedisProbe caches its ping). Nil: not checked.
	StoreReady func(ctx context.Context) error
}

// Server serves the HTTP API. Create it with New; it is safe for concurrent use.
type Server struct {
	opts    Options
	log     *slog.Logger
	handler http.Handler
	metrics *metrics
	guards  *guards
	bg      *background
	convs   *store.Conversations
	// readBuffers lends the upstream stream readers their buffers (output.go).
	readBuffers *stream.BufferPool
	// noTokenIDs is set when a generation came back without token ids (the upstream ignores
	// return_token_ids): /readyz then answers 503 until a probe generation carries ids again.
	noTokenIDs atomic.Bool
}

// New validates opts and builds the routes.
func New(opts Options) (*Server, error) {
	if opts.Logger == nil || opts.Registry == nil || opts.Upstream == nil || opts.Checkpoints == nil {
		return nil, errors.New("server: Logger, Registry, Upstream and Checkpoints are required")
	}
	if len(opts.Models) == 0 {
		return nil, errors.New("server: no models")
	}
	if opts.MaxBodyBytes <= 0 {
		opts.MaxBodyBytes = 32 << 20
	}
	if opts.MaxInputItems <= 0 {
		opts.MaxInputItems = 10000
	}
	if opts.NewID == nil {
		opts.NewID = randomID
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Auth == nil {
		opts.Auth = middleware.DevAuth{}
	}
	if opts.Runs == nil {
		opts.Runs = store.NewRuns(store.MemoryRecords(opts.Now), store.RunsOptions{Now: opts.Now})
	}
	if opts.Conversations == nil {
		opts.Conversations = store.NewConversations(store.MemoryRecords(opts.Now), store.ConversationsOptions{MaxItems: opts.MaxInputItems, Now: opts.Now})
	}
	if opts.Instance == "" {
		opts.Instance = randomID("stitch")
	}
	s := &Server{opts: opts, log: opts.Logger, metrics: newMetrics(opts.Registry), guards: newGuards(opts.Limits, opts.Registry),
		bg: newBackground(opts.Runs, opts.Instance), convs: opts.Conversations,
		readBuffers: stream.NewBufferPool(readBuffersKept, readBufferMaxBytes)}
	s.handler = s.routes()
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

func (s *Server) routes() http.Handler {
	httpMetrics := middleware.NewMetrics(s.opts.Registry)
	r := chi.NewRouter()
	r.Use(middleware.RequestIDs(s.log), middleware.Recover(s.log),
		middleware.WriteDeadlines(writeTimeout(s.opts.Limits.WriteTimeout)), middleware.NewBodyLimits(s.opts.Limits.Body).Handler)

	// Unknown routes and methods answer in OpenAI's shape (chi's defaults are plain text).
	r.NotFound(func(w http.ResponseWriter, r *http.Request) {
		middleware.WriteError(w, http.StatusNotFound, "invalid_request_error", "", "unknown_url", "Invalid URL ("+r.Method+" "+safePath(r)+")")
	})
	r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
		middleware.WriteError(w, http.StatusNotFound, "invalid_request_error", "", "unknown_url", "Invalid URL ("+r.Method+" "+safePath(r)+")")
	})

	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	r.Get("/readyz", s.handleReady)
	r.Handle("/metrics", promhttp.HandlerFor(s.opts.Registry, promhttp.HandlerOpts{}))
	if p := s.opts.UpstreamMetricsPath; p != "" && p != "/metrics" {
		r.Get(p, s.handleUpstreamMetrics)
	}

	r.Group(func(r chi.Router) {
		r.Use(middleware.Auth(s.opts.Auth))
		r.Method(http.MethodPost, "/v1/responses", httpMetrics.Handler("POST /v1/responses", http.HandlerFunc(s.handleCreate)))
		r.Method(http.MethodPost, "/v1/responses/render", httpMetrics.Handler("POST /v1/responses/render", http.HandlerFunc(s.handleRender))) // render_route.go
		r.Method(http.MethodGet, "/v1/responses/{id}", httpMetrics.Handler("GET /v1/responses/{id}", http.HandlerFunc(s.handleRetrieve)))
		r.Method(http.MethodDelete, "/v1/responses/{id}", httpMetrics.Handler("DELETE /v1/responses/{id}", http.HandlerFunc(s.handleDelete)))
		r.Method(http.MethodGet, "/v1/responses/{id}/input_items", httpMetrics.Handler("GET /v1/responses/{id}/input_items", http.HandlerFunc(s.handleInputItems)))
		r.Method(http.MethodPost, "/v1/responses/{id}/cancel", http.HandlerFunc(s.handleCancel))                     // api_routes.go
		s.apiRoutes(r, func(route string, h http.HandlerFunc) http.Handler { return httpMetrics.Handler(route, h) }) // api_routes.go
		pass := httpMetrics.Handler("passthrough", s.passthrough())
		r.Handle("/v1/*", pass)
		r.Handle("/tokenize", pass)
		r.Handle("/detokenize", pass)
	})
	return r
}

func randomID(prefix string) string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	const hexdigits = "0123456789abcdef"
	out := make([]byte, 0, len(prefix)+1+48)
	out = append(out, prefix...)
	out = append(out, '_')
	for _, c := range b {
		out = append(out, hexdigits[c>>4], hexdigits[c&15])
	}
	return string(out)
}

// writeJSON writes v (a json.RawMessage or a marshalable value) with status 200.
func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	if raw, ok := v.(json.RawMessage); ok {
		w.Write(raw)
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}
