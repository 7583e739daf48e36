package middleware

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync/atomic"
	"time"
)

// ErrBodyTimeout is returned by a request body's Read when the client did not send the whole body
// within BodyOptions.ReadTimeout (a slow-trickle body). Answer 408.
var ErrBodyTimeout = errors.New("request body not received in time")

// ErrBodyBudget is returned by a request body's Read when the bodies being received by the whole
// process already hold BodyOptions.MaxInflightBytes. Answer 429 with Retry-After.
var ErrBodyBudget = errors.New("too many request body bytes in flight")

// BodyOptions bound request bodies process-wide.
type BodyOptions struct {
	// ReadTimeout bounds the time from the first handler byte to the body's end. 0: no bound.
	// A per-request read deadline, not http.Server.ReadTimeout: that one also ends the background
	// read net/http keeps during a response, which would cancel long streams.
	ReadTimeout time.Duration
	// MaxInflightBytes bounds the bytes of all request bodies held by running handlers together
	// (they stay in memory while the request is served). 0: no bound.
	MaxInflightBytes int64
}

// BodyLimits bounds how long a body may take to arrive and how many body bytes the process holds
// at once. Bodies are charged as they are read (or at once, when Content-Length says how large
// they will be) and released when the handler returns.
type BodyLimits struct {
	opts     BodyOptions
	inflight atomic.Int64
}

// NewBodyLimits returns limits with opts.
func NewBodyLimits(opts BodyOptions) *BodyLimits { return &BodyLimits{opts: opts} }

// InflightBytes reports the body bytes charged now (for metrics and tests).
func (b *BodyLimits) InflightBytes() int64 { return b.inflight.Load() }

func (b *BodyLimits) charge(n int64) bool {
	if b.opts.MaxInflightBytes <= 0 || n <= 0 {
		b.inflight.Add(n)
		return true
	}
	if b.inflight.Add(n) > b.opts.MaxInflightBytes {
		b.inflight.Add(-n)
		return false
	}
	return true
}

// Handler wraps next so that r.Body obeys the limits.
func (b *BodyLimits) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		lb := &limitedBody{rc: r.Body, limits: b, ctl: http.NewResponseController(w)}
		defer lb.release()
		if r.ContentLength > 0 {
			// Known size: charge it all now, so a burst of large bodies is refused before any is read.
			if !b.charge(r.ContentLength) {
				lb.err = ErrBodyBudget
			} else {
				lb.charged = r.ContentLength
				lb.prepaid = true
			}
		}
		if b.opts.ReadTimeout > 0 {
			lb.deadline = true
			// Not every ResponseWriter supports deadlines (httptest's does not): then a timer ends
			// the read instead.
			if err := lb.ctl.SetReadDeadline(time.Now().Add(b.opts.ReadTimeout)); err != nil {
				lb.deadline = false
				lb.timer = time.AfterFunc(b.opts.ReadTimeout, func() { lb.expired.Store(true); r.Body.Close() })
			}
		}
		r.Body = lb
		next.ServeHTTP(w, r)
	})
}

// limitedBody is a request body under BodyLimits. One goroutine reads it (net/http's contract).
type limitedBody struct {
	rc      io.ReadCloser
	limits  *BodyLimits
	ctl     *http.ResponseController
	charged int64
	prepaid bool // Content-Length was charged up front
	err     error
	done    bool // EOF or an error was returned: the read deadline is cleared

	deadline bool // a connection read deadline is set and must be cleared
	timer    *time.Timer
	expired  atomic.Bool
}

func (lb *limitedBody) Read(p []byte) (int, error) {
	if lb.err != nil {
		return 0, lb.err
	}
	n, err := lb.rc.Read(p)
	if n > 0 && !lb.prepaid {
		if !lb.limits.charge(int64(n)) {
			lb.finish()
			lb.err = ErrBodyBudget
			return 0, lb.err
		}
		lb.charged += int64(n)
	}
	if err != nil {
		if errors.Is(err, os.ErrDeadlineExceeded) || lb.expired.Load() {
			// Keep the expired deadline: after the handler answers 408, net/http discards the
			// unread rest of the body before reusing the connection, and that read must fail at
			// once rather than wait for a client that stopped sending.
			lb.done = true
			if lb.timer != nil {
				lb.timer.Stop()
			}
			lb.err = ErrBodyTimeout
			return n, lb.err
		}
		lb.finish()
	}
	return n, err
}

func (lb *limitedBody) Close() error { return lb.rc.Close() }

// finish clears the read deadline once the body is over: net/http's background read, which
// detects a client that goes away during the response, must not inherit it.
func (lb *limitedBody) finish() {
	if lb.done {
		return
	}
	lb.done = true
	if lb.timer != nil {
		lb.timer.Stop()
	}
	if lb.deadline {
		_ = lb.ctl.SetReadDeadline(time.Time{})
	}
}

func (lb *limitedBody) release() {
	lb.finish()
	if lb.charged > 0 {
		lb.limits.inflight.Add(-lb.charged)
		lb.charged = 0
	}
}
