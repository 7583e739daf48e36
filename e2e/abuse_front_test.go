package e2e

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Issue 14's abuse suite puts a real HTTP server of its own between `stitch serve` and `stitch
// sim`: a front that forwards to the sim and records what reached it (paths, Authorization,
// bodies), and that can play the upstream faults the sim has no flag for: a vLLM started with
// --api-key, an engine that hangs (no headers, or headers and then silence), and a proxy that
// drops return_token_ids.

// frontMode is what the front does with generation requests (POST /v1/completions).
type frontMode int32

const (
	modeForward     frontMode = iota // pass to the sim
	modeHang                         // never answer (until the request ends)
	modeStall                        // answer the first chunks, then stall
	modeDropIDsFlag                  // remove return_token_ids from the request (a proxy dropping unknown params)
)

// seen is one request as the front received it.
type seen struct {
	method, path, rawPath, auth string
	body                        []byte
}

type front struct {
	t       *testing.T
	addr    string
	key     string // required Bearer key ("" accepts any)
	mode    atomic.Int32
	hanging atomic.Int32 // generation requests held by modeHang or modeStall now
	mu      sync.Mutex
	log     []seen
	proxy   *httputil.ReverseProxy
	release chan struct{} // closed to let held requests go (they then fail)
}

// startFront serves a front for the sim at simAddr on a free loopback port until t ends.
func startFront(t *testing.T, simAddr, key string) *front {
	t.Helper()
	target, err := url.Parse("http://" + simAddr)
	if err != nil {
		t.Fatal(err)
	}
	f := &front{t: t, key: key, release: make(chan struct{})}
	f.proxy = &httputil.ReverseProxy{
		Rewrite:       func(pr *httputil.ProxyRequest) { pr.SetURL(target); pr.Out.URL.RawPath = pr.In.URL.RawPath },
		FlushInterval: -1,
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	hs := &http.Server{Handler: f, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	t.Cleanup(func() {
		f.letGo()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
	})
	return f
}

func (f *front) setMode(m frontMode) { f.mode.Store(int32(m)) }

// letGo releases every held request (idempotent).
func (f *front) letGo() {
	f.mu.Lock()
	defer f.mu.Unlock()
	select {
	case <-f.release:
	default:
		close(f.release)
	}
}

// seen returns the requests received so far.
func (f *front) seen() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.log...)
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.log = append(f.log, seen{method: r.Method, path: r.URL.Path, rawPath: r.URL.RawPath, auth: r.Header.Get("Authorization"), body: body})
	release := f.release
	f.mu.Unlock()
	if f.key != "" && r.Header.Get("Authorization") != "Bearer "+f.key {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"Unauthorized"}`)
		return
	}
	generation := r.Method == http.MethodPost && r.URL.Path == "/v1/completions"
	mode := frontMode(f.mode.Load())
	if generation && mode == modeHang {
		f.hanging.Add(1)
		defer f.hanging.Add(-1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return
	}
	if generation && mode == modeDropIDsFlag {
		body = bytes.ReplaceAll(body, []byte(`,"return_token_ids":true`), nil)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	if generation && mode == modeStall {
		f.hanging.Add(1)
		defer f.hanging.Add(-1)
		f.proxy.ServeHTTP(&stallWriter{ResponseWriter: w, release: release, ctx: r.Context()}, r)
		return
	}
	f.proxy.ServeHTTP(w, r)
}

// stallWriter passes the first two writes (headers and the first chunks) and then blocks until
// the request ends or the front lets go.
type stallWriter struct {
	http.ResponseWriter
	release <-chan struct{}
	ctx     context.Context
	passed  bool // the first event went through
}

func (s *stallWriter) Write(p []byte) (int, error) {
	if s.passed {
		select {
		case <-s.ctx.Done():
		case <-s.release:
		}
		return 0, context.Canceled
	}
	// Pass exactly the first server-sent event (however the upstream batched its writes), then
	// stall: the stream has begun and will never end.
	// The rest of p is swallowed (reported written), so the proxy keeps the stream open.
	whole := len(p)
	if i := bytes.Index(p, []byte("\n\n")); i >= 0 {
		p = p[:i+2]
		s.passed = true
	}
	if _, err := s.ResponseWriter.Write(p); err != nil {
		return 0, err
	}
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return whole, nil
}

func (s *stallWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
