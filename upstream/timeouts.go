package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// ErrTimeout means vLLM accepted a generation but sent nothing for too long: no first byte within
// Options.FirstByteTimeout, or a gap between two bytes longer than Options.IdleTimeout. The caller
// answers 504 (or response.failed once streaming began).
var ErrTimeout = errors.New("upstream timed out")

// errFirstByte and errIdle are the cancellation causes of the two timers.
var (
	errFirstByte = fmt.Errorf("%w: no first byte in time", ErrTimeout)
	errIdle      = fmt.Errorf("%w: stream idle too long", ErrTimeout)
)

// progress records when generations last made progress and last timed out, so readiness can
// tell a stuck upstream (one whose /health still answers) from a busy one.
type progress struct {
	lastByte    atomic.Int64 // unix nanoseconds of the last byte any generation received
	lastTimeout atomic.Int64 // unix nanoseconds of the last timeout
}

func (p *progress) sawByte()    { p.lastByte.Store(time.Now().UnixNano()) }
func (p *progress) sawTimeout() { p.lastTimeout.Store(time.Now().UnixNano()) }

// Stalled reports whether the most recent event of any generation was a timeout: no byte arrived
// since. A later byte (of any generation, or of Probe) clears it.
func (c *Client) Stalled() bool {
	t := c.progress.lastTimeout.Load()
	return t != 0 && t > c.progress.lastByte.Load()
}

// withTimeouts posts a generation under the first-byte and idle timeouts. The returned body's
// Read fails with an error wrapping ErrTimeout when one fires.
func (c *Client) withTimeouts(ctx context.Context, send func(ctx context.Context) (*http.Response, error)) (io.ReadCloser, error) {
	if c.firstByte <= 0 && c.idle <= 0 {
		resp, err := send(ctx)
		if err != nil {
			return nil, err
		}
		return &watchedBody{rc: resp.Body, progress: &c.progress, cancel: func(error) {}, ctx: ctx}, nil
	}
	ctx, cancel := context.WithCancelCause(ctx)
	wb := &watchedBody{progress: &c.progress, cancel: cancel, ctx: ctx, idle: c.idle}
	if c.firstByte > 0 {
		wb.timer = time.AfterFunc(c.firstByte, func() { cancel(errFirstByte) })
	}
	resp, err := send(ctx)
	if err != nil {
		wb.stop()
		if cause := context.Cause(ctx); errors.Is(cause, ErrTimeout) {
			c.progress.sawTimeout()
			return nil, fmt.Errorf("%w (after %v)", cause, c.firstByte)
		}
		cancel(nil)
		return nil, err
	}
	wb.rc = resp.Body
	return wb, nil
}

// watchedBody is a generation's body under the timers: the first byte stops the first-byte timer
// and starts the idle one, which every later byte resets.
type watchedBody struct {
	rc       io.ReadCloser
	ctx      context.Context
	cancel   context.CancelCauseFunc
	progress *progress
	idle     time.Duration

	mu      sync.Mutex // guards timer against the AfterFunc goroutine's view via stop
	timer   *time.Timer
	started bool
}

func (wb *watchedBody) Read(p []byte) (int, error) {
	n, err := wb.rc.Read(p)
	if n > 0 {
		wb.progress.sawByte()
		wb.mu.Lock()
		switch {
		case !wb.started && wb.idle > 0:
			if wb.timer != nil {
				wb.timer.Stop()
			}
			wb.timer = time.AfterFunc(wb.idle, func() { wb.cancel(errIdle) })
		case wb.idle > 0:
			wb.timer.Reset(wb.idle)
		case !wb.started && wb.timer != nil:
			wb.timer.Stop() // first byte in; no idle bound
			wb.timer = nil
		}
		wb.started = true
		wb.mu.Unlock()
	}
	if err != nil && err != io.EOF {
		if cause := context.Cause(wb.ctx); errors.Is(cause, ErrTimeout) {
			wb.progress.sawTimeout()
			return n, cause
		}
	}
	return n, err
}

func (wb *watchedBody) stop() {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	if wb.timer != nil {
		wb.timer.Stop()
	}
}

func (wb *watchedBody) Close() error {
	wb.stop()
	err := wb.rc.Close()
	wb.cancel(nil)
	return err
}
