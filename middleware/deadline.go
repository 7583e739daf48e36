package middleware

import (
	"net/http"
	"time"
)

// WriteDeadlines bounds every write to the client: before each Write (and Flush) the connection's
// write deadline is moved to now+timeout, so a client that stops reading fails the write instead
// of blocking the handler (and the generation behind it) forever. Idle time between writes does
// not count. The deadline is moved only once an eighth of timeout has passed since it last was,
// so each write gets at least 7/8 of timeout: a stream's writes, many a second, would otherwise
// each pay for moving a timer (issue 20). When the handler returns the deadline is renewed once
// more, for net/http's own final flush. timeout <= 0 disables it.
func WriteDeadlines(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if timeout <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dw := &deadlineWriter{ResponseWriter: w, ctl: http.NewResponseController(w), timeout: timeout}
			defer dw.final()
			next.ServeHTTP(dw, r)
		})
	}
}

// deadlineWriter renews the write deadline before each write; it keeps http.Flusher and Unwrap
// for http.ResponseController.
type deadlineWriter struct {
	http.ResponseWriter
	ctl         *http.ResponseController
	timeout     time.Duration
	deadline    time.Time // the deadline last set (zero: none yet)
	unsupported bool      // the writer has no deadlines (httptest): stop asking
}

// renew moves the deadline to now+timeout when it is nearer than 7/8 of timeout.
func (w *deadlineWriter) renew() {
	if w.unsupported {
		return
	}
	now := time.Now()
	if !w.deadline.IsZero() && w.deadline.Sub(now) >= w.timeout-w.timeout/8 {
		return
	}
	w.deadline = now.Add(w.timeout)
	if err := w.ctl.SetWriteDeadline(w.deadline); err != nil {
		w.unsupported = true
	}
}

// final renews the deadline for net/http's flush after the handler, however recent the last.
func (w *deadlineWriter) final() {
	w.deadline = time.Time{}
	w.renew()
}

func (w *deadlineWriter) Write(p []byte) (int, error) {
	w.renew()
	return w.ResponseWriter.Write(p)
}

func (w *deadlineWriter) Flush() {
	w.renew()
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// FlushError lets http.ResponseController report a failed flush (a client that stopped reading).
func (w *deadlineWriter) FlushError() error {
	w.renew()
	return http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *deadlineWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
