package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"path"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/upstream"
)

// passRoute is one vLLM route stitch forwards. Everything else is answered 404 here: vLLM's
// admin and debug routes (/metrics, /reset_prefix_cache, /collective_rpc, LoRA loading, …) are
// tenant-less, and its own /v1/responses and /v1/conversations would bypass stitch's tenancy.
type passRoute struct {
	method string
	// generation: the body names a model and generates; it takes a generation slot and is sent
	// with the tenant's own cache_salt, whatever the client wrote.
	generation bool
}

// passRoutes is the allowlist, keyed by the exact path (no cleaning is done for the client: a
// path that is not already clean, or that escapes characters, is not on the list).
var passRoutes = map[string]passRoute{
	"/v1/models":           {method: http.MethodGet},
	"/v1/chat/completions": {method: http.MethodPost, generation: true},
	"/v1/completions":      {method: http.MethodPost, generation: true},
	"/v1/embeddings":       {method: http.MethodPost},
	"/tokenize":            {method: http.MethodPost},
	"/detokenize":          {method: http.MethodPost},
}

// passthrough proxies the allowlisted vLLM routes, flushing streamed bodies as they arrive. The
// client's API key is replaced by the upstream's (the tenant was already authenticated; the
// upstream client's transport sets --upstream-api-key), the path is the allowlist's own string
// (never the client's bytes) and the query is dropped (none of these routes takes one).
func (s *Server) passthrough() http.Handler {
	target, err := url.Parse(s.opts.Upstream.BaseURL())
	if err != nil {
		// The base URL was validated by configs; a bad one here is a wiring bug.
		panic("server: upstream base URL: " + err.Error())
	}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			clean := pr.In.URL.Path // routePath accepted it: exactly an allowlist key
			pr.SetURL(target)
			pr.Out.URL.Path = path.Join("/", target.Path, clean)
			pr.Out.URL.RawPath = ""
			pr.Out.URL.RawQuery = ""
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("api-key")
			pr.Out.Header.Del("Cookie")
		},
		Transport:     s.opts.Upstream.HTTPClient().Transport,
		FlushInterval: -1,
		ModifyResponse: func(resp *http.Response) error {
			if w, ok := resp.Request.Context().Value(passWatchKey{}).(*passWatch); ok {
				w.started(resp)
			}
			return nil
		},
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if cause := context.Cause(r.Context()); errors.Is(cause, upstream.ErrTimeout) {
				err = cause
			}
			s.log.Warn("passthrough failed", "path", r.URL.Path, "err", err)
			writeError(w, classify(upstreamErr(err)))
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		route, ok := routeFor(r)
		if !ok {
			middleware.WriteError(w, http.StatusNotFound, "invalid_request_error", "", "unknown_url",
				fmt.Sprintf("Invalid URL (%s %s)", r.Method, safePath(r)))
			return
		}
		if r.Method == http.MethodPost {
			body, err := s.readBody(w, r)
			if err != nil {
				writeError(w, err)
				return
			}
			if route.generation {
				release, ok := s.guards.tryAdmit(w)
				if !ok {
					return
				}
				defer release()
				if body, err = s.withTenantSalt(r.Context(), body); err != nil {
					writeError(w, err)
					return
				}
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			r.ContentLength = int64(len(body))
			r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			r.Header.Del("Transfer-Encoding")
			if route.generation && !gjson.GetBytes(body, "stream").Bool() {
				// A non-streamed generation sends its headers only when it is done: no
				// first-byte bound applies, only the client's patience.
				watch := s.watchPassthrough(r, 0)
				defer watch.stop()
				proxy.ServeHTTP(w, watch.req)
				return
			}
		}
		watch := s.watchPassthrough(r, s.opts.Limits.UpstreamFirstByte)
		defer watch.stop()
		proxy.ServeHTTP(w, watch.req)
	})
}

// routeFor returns the allowlisted route of r: its path must be one of passRoutes' keys exactly
// as sent (clean, nothing percent-encoded) and its method the route's.
func routeFor(r *http.Request) (passRoute, bool) {
	p := r.URL.Path
	if r.URL.RawPath != "" && r.URL.RawPath != p {
		return passRoute{}, false // %2e%2e, %2f and friends: never ours to interpret
	}
	if path.Clean(p) != p {
		return passRoute{}, false
	}
	route, ok := passRoutes[p]
	if !ok || route.method != r.Method {
		return passRoute{}, false
	}
	return route, true
}

// safePath is the request path for an error message, cut short and escaped.
func safePath(r *http.Request) string {
	p := r.URL.EscapedPath()
	if len(p) > 128 {
		p = p[:128] + "…"
	}
	return p
}

// withTenantSalt sets the body's cache_salt to the tenant's own for the model it names, whatever
// the client sent: a client-chosen salt would let one tenant probe another's prefix cache.
func (s *Server) withTenantSalt(ctx context.Context, body []byte) ([]byte, error) {
	if !gjson.ValidBytes(body) {
		return nil, badRequest("", "We could not parse the JSON body of your request.")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, badRequest("", "The request body must be a JSON object.")
	}
	model := root.Get("model")
	if model.Type != gjson.String {
		return nil, badRequest("model", "Missing required parameter: 'model'.")
	}
	salt := s.passthroughSalt(middleware.Tenant(ctx), model.Str)
	out, err := sjson.SetBytes(body, "cache_salt", salt)
	if err != nil {
		return nil, badRequest("", "The request body could not be rewritten: %v", err)
	}
	return out, nil
}

// passthroughSalt is the cache_salt of tenant for model: Options.CacheSalt when wired, else the
// served model's own salter, else a digest of tenant and model (not secret, but it need not be:
// clients can no longer choose the salt, so knowing another tenant's gains nothing).
func (s *Server) passthroughSalt(tenant, model string) string {
	if s.opts.CacheSalt != nil {
		return s.opts.CacheSalt(tenant, model)
	}
	if m, ok := s.opts.Models[model]; ok && m.CacheSalt != nil {
		if salt := m.CacheSalt(tenant); salt != "" {
			return salt
		}
	}
	sum := sha256.Sum256([]byte("stitch passthrough cache salt v1\x00" + tenant + "\x00" + model))
	return hex.EncodeToString(sum[:16])
}

type passWatchKey struct{}

// passWatch applies the upstream timeouts to one proxied request: firstByte until the response
// headers, then Limits.UpstreamIdle between two body reads (a stalled stream is cut, which the
// proxy turns into an aborted response).
type passWatch struct {
	req    *http.Request
	cancel context.CancelCauseFunc
	timer  *time.Timer
	idle   time.Duration
}

func (s *Server) watchPassthrough(r *http.Request, firstByte time.Duration) *passWatch {
	ctx, cancel := context.WithCancelCause(r.Context())
	w := &passWatch{cancel: cancel, idle: s.opts.Limits.UpstreamIdle}
	ctx = context.WithValue(ctx, passWatchKey{}, w)
	w.req = r.WithContext(ctx)
	if firstByte > 0 {
		w.timer = time.AfterFunc(firstByte, func() { cancel(fmt.Errorf("%w: no response headers within %v", upstream.ErrTimeout, firstByte)) })
	}
	return w
}

// started runs when the headers arrived: the first-byte timer stops and the idle one watches the body.
func (w *passWatch) started(resp *http.Response) {
	if w.timer != nil {
		w.timer.Stop()
	}
	if w.idle > 0 {
		resp.Body = &idleBody{rc: resp.Body, idle: w.idle, timer: time.AfterFunc(w.idle, func() {
			w.cancel(fmt.Errorf("%w: stream idle for %v", upstream.ErrTimeout, w.idle))
		})}
	}
}

func (w *passWatch) stop() {
	if w.timer != nil {
		w.timer.Stop()
	}
	w.cancel(nil)
}

// idleBody resets its timer on every read.
type idleBody struct {
	rc    io.ReadCloser
	idle  time.Duration
	timer *time.Timer
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.rc.Close()
}

// upstreamErr classifies a transport error of the pass-through proxy.
func upstreamErr(err error) error {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", upstream.ErrUnreachable, err)
}
