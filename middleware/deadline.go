package middleware

import (
	"net/http"
	"time"
)

// WriteDeadlines bounds every write to the client: before each Write (and Flush) the connection's
// write deadline is moved to now+timeout, so a client that stops reading fails the write instead
// of blocking the handler (and the generation behind it) forever. Idle time between writes does
// not count. When the handler returns the deadline is renewed once more, for net/http's own final
// flush. timeout <= 0 disables it.
func WriteDeadlines(timeout time.Duration) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if timeout <= 0 {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			dw := &deadlineWriter{ResponseWriter: w, ctl: http.NewResponseController(w), timeout: timeout}
			defer dw.renew()
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
	unsupported bool // the writer has no deadlines (httptest): stop asking
}

func (w *deadlineWriter) renew() {
	if w.unsupported {
		return
	}
	if err := w.ctl.SetWriteDeadline(time.Now().Add(w.timeout)); err != nil {
		w.unsupported = true
	}
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
