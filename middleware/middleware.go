package middleware

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	tenantKey
	loggerKey
)

// Tenant returns the authenticated tenant ("" outside Auth).
func Tenant(ctx context.Context) string {
	s, _ := ctx.Value(tenantKey).(string)
	return s
}

// WithTenant returns ctx carrying tenant; for tests and in-process callers.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey, tenant)
}

// Logger returns the request-scoped logger set by RequestIDs, or fallback.
func Logger(ctx context.Context, fallback *slog.Logger) *slog.Logger {
	if l, ok := ctx.Value(loggerKey).(*slog.Logger); ok {
		return l
	}
	return fallback
}

// RequestIDs assigns each request an id (the client's X-Request-Id when it is sane, else a random one),
// echoes it in the X-Request-Id response header and puts a logger with request_id in the context.
func RequestIDs(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			id := r.Header.Get("X-Request-Id")
			if id == "" || len(id) > 128 {
				var b [12]byte
				_, _ = rand.Read(b[:])
				id = "req_" + hex.EncodeToString(b[:])
			}
			w.Header().Set("X-Request-Id", id)
			ctx := context.WithValue(r.Context(), requestIDKey, id)
			ctx = context.WithValue(ctx, loggerKey, logger.With("request_id", id))
			next.ServeHTTP(w, r.WithContext(ctx))
		})
	}
}

// Recover turns a handler panic into a 500 in OpenAI's error shape and logs the stack once. When
// the handler already sent its status (an SSE stream answered 200), a JSON error would corrupt the
// stream and be read as event data: the connection is aborted instead, which every client reports
// as a broken stream. http.ErrAbortHandler is re-panicked, as net/http expects.
func Recover(logger *slog.Logger) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				if v == http.ErrAbortHandler {
					panic(v)
				}
				Logger(r.Context(), logger).Error("handler panic", "panic", v, "stack", string(debug.Stack()), "response_started", sw.wrote)
				if sw.wrote {
					panic(http.ErrAbortHandler)
				}
				WriteError(w, http.StatusInternalServerError, "server_error", "", "", "internal error")
			}()
			next.ServeHTTP(sw, r)
		})
	}
}

// WriteError writes an OpenAI-shaped error: {"error":{"message","type","param","code"}}.
// Empty param and code are sent as null, as OpenAI does.
func WriteError(w http.ResponseWriter, status int, typ, param, code, message string) {
	type body struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	b := body{Message: message, Type: typ}
	if param != "" {
		b.Param = &param
	}
	if code != "" {
		b.Code = &code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(struct {
		Error body `json:"error"`
	}{b})
}

// Metrics counts requests and observes their duration by route pattern and status.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// NewMetrics registers the HTTP metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "stitch_http_requests_total", Help: "HTTP requests by route and status.",
		}, []string{"route", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "stitch_http_request_seconds", Help: "HTTP request duration by route (streams: until the last byte).",
			Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
		}, []string{"route"}),
	}
	reg.MustRegister(m.requests, m.duration)
	return m
}

// Handler wraps next, labelling it with route (a fixed pattern, never the raw path).
func (m *Metrics) Handler(route string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		next.ServeHTTP(sw, r)
		m.requests.WithLabelValues(route, strconv.Itoa(sw.status)).Inc()
		m.duration.WithLabelValues(route).Observe(time.Since(start).Seconds())
	})
}

// statusWriter records the status code while keeping http.Flusher and Unwrap for ResponseController.
type statusWriter struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.wrote {
		w.status, w.wrote = code, true
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
