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

	"github.com/stitchllm/stitch/stream"
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

func (p *progress) sawByte()                 { p.sawByteAt(time.Now().UnixNano()) }
func (p *progress) sawByteAt(unixNano int64) { p.lastByte.Store(unixNano) }
func (p *progress) sawTimeout()              { p.lastTimeout.Store(time.Now().UnixNano()) }

// Watchdog applies the first-byte and idle timeouts to generation streams and records their
// progress for readiness. The HTTP Client holds one; another transport (vllmgrpc's engine client)
// wraps its streams in its own. The zero value has no timeouts; it is safe for concurrent use.
type Watchdog struct {
	// FirstByte bounds the wait for a stream's first byte; Idle bounds the gap between two reads
	// that return data. 0: unbounded.
	FirstByte, Idle time.Duration

	progress progress
}

// Stalled reports whether the most recent event of any generation was a timeout: no byte arrived
// since. A later byte (of any generation, or of Probe) clears it.
func (c *Client) Stalled() bool { return c.watch.Stalled() }

// Stalled reports whether the most recent event of any watched stream was a timeout.
func (w *Watchdog) Stalled() bool {
	t := w.progress.lastTimeout.Load()
	return t != 0 && t > w.progress.lastByte.Load()
}

// SawByte records progress outside a watched stream (a probe's answer), clearing Stalled.
func (w *Watchdog) SawByte() { w.progress.sawByte() }

// Open starts a stream with send under the timeouts: send's context is cancelled with a cause
// wrapping ErrTimeout when no first byte arrives in time (send itself may be what waits for it,
// as an HTTP request waits for response headers), or when a read of the returned body waits
// longer than Idle. Closing the body stops the timers and cancels send's context.
func (w *Watchdog) Open(ctx context.Context, send func(ctx context.Context) (io.ReadCloser, error)) (io.ReadCloser, error) {
	wb, sctx := w.watch(ctx)
	rc, err := send(sctx)
	if err != nil {
		return nil, wb.failed(err, w.FirstByte)
	}
	wb.rc = rc
	return wb, nil
}

// OpenChunks is Open for an upstream that yields chunks rather than bytes (vllmgrpc): a chunk is
// what a byte is to Open, so the first-byte bound ends at the first chunk and the idle bound
// spans two chunks.
func (w *Watchdog) OpenChunks(ctx context.Context, send func(ctx context.Context) (ChunkStream, error)) (ChunkStream, error) {
	wb, sctx := w.watch(ctx)
	cs, err := send(sctx)
	if err != nil {
		return nil, wb.failed(err, w.FirstByte)
	}
	return &watchedChunks{cs: cs, wb: wb}, nil
}

// watch returns the timers of one stream, started, and the context its send must use.
func (w *Watchdog) watch(ctx context.Context) (*watchedBody, context.Context) {
	if w.FirstByte <= 0 && w.Idle <= 0 {
		return &watchedBody{progress: &w.progress, cancel: func(error) {}, ctx: ctx}, ctx
	}
	ctx, cancel := context.WithCancelCause(ctx)
	wb := &watchedBody{progress: &w.progress, cancel: cancel, ctx: ctx, idle: w.Idle}
	if w.FirstByte > 0 {
		wb.timer = time.AfterFunc(w.FirstByte, func() { cancel(errFirstByte) })
	}
	return wb, ctx
}

// failed ends the timers of a stream whose send failed, naming the timeout when one caused it.
func (wb *watchedBody) failed(err error, firstByte time.Duration) error {
	wb.stop()
	if cause := context.Cause(wb.ctx); errors.Is(cause, ErrTimeout) {
		wb.progress.sawTimeout()
		return fmt.Errorf("%w (after %v)", cause, firstByte)
	}
	wb.cancel(nil)
	return err
}

// ChunkStream is a generation read as the chunks stitch's stream package parses from vLLM's
// SSE, for an upstream that has them without SSE text (vllmgrpc). Next returns io.EOF after the
// last chunk (the usage chunk, when asked for); Close ends the generation.
type ChunkStream interface {
	Next() (*stream.Chunk, error)
	Close() error
}

// watchedChunks is a ChunkStream under a stream's timers.
type watchedChunks struct {
	cs ChunkStream
	wb *watchedBody
}

func (w *watchedChunks) Next() (*stream.Chunk, error) {
	ch, err := w.cs.Next()
	n := 0
	if ch != nil {
		n = 1
	}
	return ch, w.wb.saw(n, err)
}

func (w *watchedChunks) Close() error {
	w.wb.stop()
	err := w.cs.Close()
	w.wb.cancel(nil)
	return err
}

// withTimeouts posts a generation under the client's watchdog.
func (c *Client) withTimeouts(ctx context.Context, send func(ctx context.Context) (*http.Response, error)) (io.ReadCloser, error) {
	return c.watch.Open(ctx, func(ctx context.Context) (io.ReadCloser, error) {
		resp, err := send(ctx)
		if err != nil {
			return nil, err
		}
		return resp.Body, nil
	})
}

// watchedBody is a generation's body under the timers: the first byte stops the first-byte timer
// and starts the idle one. Later bytes only record when they came: the idle timer, when it fires,
// waits again for what is left of the bound since the last byte, instead of every read moving it
// (a stream reads many times a second, and each move of a timer costs a lock and the timer heap;
// issue 20).
type watchedBody struct {
	rc       io.ReadCloser
	ctx      context.Context
	cancel   context.CancelCauseFunc
	progress *progress
	idle     time.Duration
	started  bool         // a byte came (read by the reading goroutine only)
	last     atomic.Int64 // unix nanoseconds of the last read that returned bytes

	mu    sync.Mutex // guards timer against the AfterFunc goroutine's view via stop
	timer *time.Timer
}

func (wb *watchedBody) Read(p []byte) (int, error) {
	n, err := wb.rc.Read(p)
	return n, wb.saw(n, err)
}

// saw records a read's outcome: progress when it returned n > 0 units (bytes or chunks), and the
// timeout that ended the stream, when one did, in place of its error.
func (wb *watchedBody) saw(n int, err error) error {
	if n > 0 {
		now := time.Now().UnixNano()
		wb.progress.sawByteAt(now)
		wb.last.Store(now)
		if !wb.started {
			wb.started = true
			wb.firstByte()
		}
	}
	if err != nil && err != io.EOF {
		if cause := context.Cause(wb.ctx); errors.Is(cause, ErrTimeout) {
			wb.progress.sawTimeout()
			return cause
		}
	}
	return err
}

// firstByte stops the first-byte timer and starts the idle one, if there is an idle bound.
func (wb *watchedBody) firstByte() {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	wb.stopLocked()
	if wb.idle > 0 {
		wb.timer = time.AfterFunc(wb.idle, wb.checkIdle)
	}
}

// checkIdle runs when the idle bound may have passed: it fails the stream if no byte came for
// that long, and otherwise waits for the rest of the bound after the last byte.
func (wb *watchedBody) checkIdle() {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	if wb.timer == nil {
		return // stopped meanwhile
	}
	if since := time.Duration(time.Now().UnixNano() - wb.last.Load()); since < wb.idle {
		wb.timer.Reset(wb.idle - since)
		return
	}
	wb.cancel(errIdle)
}

func (wb *watchedBody) stop() {
	wb.mu.Lock()
	defer wb.mu.Unlock()
	wb.stopLocked()
}

// stopLocked stops the running timer, if any (wb.mu held).
func (wb *watchedBody) stopLocked() {
	if wb.timer != nil {
		wb.timer.Stop()
		wb.timer = nil
	}
}

func (wb *watchedBody) Close() error {
	wb.stop()
	err := wb.rc.Close()
	wb.cancel(nil)
	return err
}
