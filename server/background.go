package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/store"
	"github.com/stitchllm/stitch/stream"
)

// Background responses (background: true). The create answers at once; the generation runs in
// its own goroutine, detached from the connection but holding its admission slot, under the
// server's lifetime (Shutdown). Its events go to the run's log in store.Runs, shared by every
// pod on the same Redis, so any pod answers GET (its state), GET ?stream=true (the log replayed
// after starting_after, then followed) and cancel. The owner renews a lease with every write and
// at least every third of the lease; a run whose owner died reads as failed once the lease ends.

// followPoll is how long a follower waits for new events before reading the log again (writes
// on this pod wake it at once; writes on other pods are seen by this poll).
const followPoll = 100 * time.Millisecond

// errRunCancelled and errRunDeleted end a background generation's context (as its cause).
var (
	errRunCancelled = errors.New("background response cancelled")
	errRunDeleted   = errors.New("background response deleted")
	errShuttingDown = errors.New("server shutting down")
	errLeaseLost    = errors.New("background response lease lost (the store did not answer)")
)

// background tracks the runs this process generates.
type background struct {
	runs  *store.Runs
	owner string

	ctx    context.Context // ends at Shutdown's deadline: every run left is failed
	cancel context.CancelCauseFunc

	mu      sync.Mutex
	closed  bool
	wg      sync.WaitGroup
	running map[string]context.CancelCauseFunc // tenant+"\x00"+id → the generation's cancel
}

func newBackground(runs *store.Runs, owner string) *background {
	ctx, cancel := context.WithCancelCause(context.Background())
	return &background{runs: runs, owner: owner, ctx: ctx, cancel: cancel, running: map[string]context.CancelCauseFunc{}}
}

// track registers a generation; false once Shutdown began.
func (b *background) track(key string, cancel context.CancelCauseFunc) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.running[key] = cancel
	b.wg.Add(1)
	return true
}

func (b *background) untrack(key string) {
	b.mu.Lock()
	delete(b.running, key)
	b.mu.Unlock()
	b.wg.Done()
}

// stop cancels a generation of this process (a cancel or delete answered here).
func (b *background) stop(key string, cause error) {
	b.mu.Lock()
	cancel := b.running[key]
	b.mu.Unlock()
	if cancel != nil {
		cancel(cause)
	}
}

// Shutdown stops taking background responses, waits for the running ones until ctx ends, then
// fails those left (response.failed, "the server shut down") and waits for them to record it.
// Call it after http.Server.Shutdown.
func (s *Server) Shutdown(ctx context.Context) error {
	b := s.bg
	b.mu.Lock()
	b.closed = true
	n := len(b.running)
	b.mu.Unlock()
	done := make(chan struct{})
	go func() { b.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
	}
	s.log.Warn("shutdown: failing the background responses still running", "count", n)
	b.cancel(errShuttingDown)
	<-done // each records its failure with a bounded write
	return nil
}

func runKey(tenant, id string) string { return tenant + "\x00" + id }

func parseBackground(root jsonObject, r *request) error {
	var err error
	if r.Background, err = optBool(root, "background", false); err != nil {
		return err
	}
	if r.Background && !r.Store {
		return badRequest("background", "Background responses must be stored: 'background' requires 'store' to be true.")
	}
	return nil
}

// encodeEvents returns events as server-sent events, one entry each.
func encodeEvents(events []stream.Event) [][]byte {
	out := make([][]byte, len(events))
	for i, ev := range events {
		out[i] = stream.AppendEvent(nil, ev)
	}
	return out
}

// startBackground creates the run, answers the client (the response in progress, or its event
// stream followed from the log) and starts the generation. It owns release (the admission slot).
func (s *Server) startBackground(ctx context.Context, w http.ResponseWriter, t *turn, release func()) {
	out := s.newOutput(t)
	begin := out.beginQueued()
	id := out.responseID()
	run := &store.Run{ID: id, Tenant: t.tenant, Owner: s.bg.owner, Status: store.RunInProgress, Response: out.responseJSON()}
	gctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx)) // request values, not its end
	stopOnShutdown := context.AfterFunc(s.bg.ctx, func() { cancel(context.Cause(s.bg.ctx)) })
	key := runKey(t.tenant, id)
	if !s.bg.track(key, cancel) {
		stopOnShutdown()
		cancel(nil)
		release()
		writeError(w, &APIError{Status: http.StatusServiceUnavailable, Type: "server_error", Code: "server_shutting_down", Message: "The server is shutting down; retry on another replica."})
		return
	}
	if err := s.bg.runs.Create(ctx, run, encodeEvents(begin)); err != nil {
		stopOnShutdown()
		cancel(nil)
		s.bg.untrack(key)
		release()
		ae := writeError(w, fmt.Errorf("create background response: %w", err))
		t.log.LogAttrs(ctx, levelFor(ae), "background response not created", slog.Any("err", err))
		return
	}
	go func() {
		defer s.bg.untrack(key)
		defer release()
		defer stopOnShutdown()
		defer cancel(nil)
		s.runBackground(gctx, cancel, t, out)
	}()
	if t.req.Stream {
		s.follow(ctx, w, t.tenant, id, -1)
		return
	}
	writeJSON(w, run.Response)
}

// runBackground generates a background response into its run's log and records its end.
func (s *Server) runBackground(ctx context.Context, cancel context.CancelCauseFunc, t *turn, out *output) {
	id := out.responseID()
	runs := s.bg.runs
	// The lease: renewed by every write, and here when nothing is written (a long prompt, a
	// slow model); a cancel or delete made on another pod is seen the same way.
	// A lease that could not be renewed in time has ended for every reader (the response reads
	// failed): the owner stops too rather than finish a response others saw fail.
	sink := &runSink{runs: runs, tenant: t.tenant, id: id, cancel: cancel}
	sink.renewed.Store(time.Now().UnixNano())
	hbDone := make(chan struct{})
	hbStop := make(chan struct{})
	go func() {
		defer close(hbDone)
		tick := time.NewTicker(max(runs.Lease()/3, 10*time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-hbStop:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				rctx, rcancel := context.WithTimeout(ctx, runs.Lease()/3)
				_, err := runs.Append(rctx, t.tenant, id, nil)
				rcancel()
				stopOnRunErr(cancel, err)
				if err == nil {
					sink.renewed.Store(time.Now().UnixNano())
				} else if time.Since(time.Unix(0, sink.renewed.Load())) >= runs.Lease() {
					cancel(errLeaseLost)
				}
			}
		}
	}()
	defer func() { close(hbStop); <-hbDone }()

	var runErr error
	var final []stream.Event
	rc, err := s.openUpstream(ctx, t)
	opened := err == nil
	if err != nil {
		ae := classify(err)
		runErr = err
		final = out.conv.Fail(nil, "server_error", ae.Message)
	} else {
		runErr = out.consume(ctx, rc, sink)
		rc.Close()
		if ctx.Err() == nil {
			final = s.finished(out, runErr)
		}
	}
	// The race with a cancel is decided here, in the store every pod shares: once claimed, a
	// cancel answers this response's end (and so does a shutdown: the response is finished); a
	// cancel recorded first, like any other end of ctx, means nothing is stored.
	claimed := ctx.Err() == nil && s.claimRun(ctx, cancel, t, id, sink)
	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer wcancel()
	if !claimed {
		switch cause := context.Cause(ctx); {
		case errors.Is(cause, errRunCancelled):
			r := out.conv.Response()
			r.Status = store.RunCancelled
			err := retryUnavailable(wctx, func(ctx context.Context) error {
				_, err := runs.Finish(ctx, t.tenant, id, store.RunCancelled, r.AppendJSON(nil), nil)
				return err
			})
			if err != nil && !errors.Is(err, store.ErrNotFound) {
				t.log.Warn("record the cancelled background response", "response_id", id, "err", err)
			}
			s.metrics.responses.WithLabelValues("cancelled").Inc()
			t.log.Info("background response cancelled", "response_id", id, "prompt_tokens", len(t.prompt.IDs))
		case errors.Is(cause, errRunDeleted):
			s.metrics.responses.WithLabelValues("cancelled").Inc()
			t.log.Info("background response deleted while running", "response_id", id)
		default:
			msg := "The server shut down before the response finished."
			if errors.Is(cause, errLeaseLost) {
				msg = "The server generating this response lost its response store."
			}
			events := out.conv.Fail(nil, "server_error", msg)
			logged := sink.pendingWith(events)
			err := retryUnavailable(wctx, func(ctx context.Context) error {
				_, err := runs.Finish(ctx, t.tenant, id, store.RunFailed, out.responseJSON(), logged)
				return err
			})
			if err != nil {
				t.log.Warn("record the failed background response", "response_id", id, "err", err)
			}
			s.metrics.responses.WithLabelValues("failed").Inc()
			t.log.Warn("background response failed", "response_id", id, "cause", cause)
		}
		return
	}
	// Claimed: no cancel can win any more; the response is stored, its artifact advanced and
	// its conversation appended before its end is recorded (a reader that sees it finished can
	// continue from it).
	if opened {
		final = s.settle(wctx, t, out, runErr, final)
	} else {
		s.metrics.responses.WithLabelValues("failed").Inc()
	}
	status := out.status()
	if !store.RunFinished(status) {
		status = store.RunFailed
	}
	fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), runs.Lease())
	defer fcancel()
	err = retryUnavailable(fctx, func(ctx context.Context) error {
		_, err := runs.Finish(ctx, t.tenant, id, status, out.responseJSON(), encodeEvents(final))
		return err
	})
	if err != nil {
		t.log.Warn("record the end of a background response", "response_id", id, "err", err)
	}
	s.logSummary(ctx, t, out, runErr)
}

// claimRun marks the finished generation's run as settling (store.Runs.Settle), logging its
// last queued events, so that no cancel can win once the response is being stored. A run
// cancelled, deleted or past its lease first ends ctx (through cancel) instead; the queued
// events then stay with sink. Store outages are retried until ctx ends (the heartbeat ends it
// once the lease has passed without a renewal). It reports whether the run was claimed; when not,
// ctx has ended, with the reason as its cause.
func (s *Server) claimRun(ctx context.Context, cancel context.CancelCauseFunc, t *turn, id string, sink *runSink) bool {
	events := sink.take()
	err := retryUnavailable(ctx, func(ctx context.Context) error {
		rctx, rcancel := context.WithTimeout(ctx, s.bg.runs.Lease()/3)
		defer rcancel()
		_, err := s.bg.runs.Settle(rctx, t.tenant, id, events)
		return err
	})
	switch {
	case err == nil:
		return true
	case errors.Is(err, store.ErrRunFinished):
		cancel(errRunCancelled)
	case errors.Is(err, store.ErrNotFound):
		cancel(errRunDeleted)
	case ctx.Err() != nil: // cancelled, deleted, lease lost or shutdown while retrying
	default: // lease expired, or a store that refuses the write
		t.log.Warn("background response: could not claim its end", "response_id", id, "err", err)
		cancel(errLeaseLost)
	}
	sink.pending = append(events, sink.pending...)
	return false
}

// storeRetryMax is the longest pause between two tries of a store call that found the store
// unavailable (retryUnavailable; follow).
const storeRetryMax = time.Second

// retryUnavailable calls fn until it returns anything but store.ErrUnavailable or ctx ends,
// pausing between tries (50 ms, doubling up to storeRetryMax). It returns fn's last error, or
// ctx's cause wrapped around it.
func retryUnavailable(ctx context.Context, fn func(context.Context) error) error {
	pause := 50 * time.Millisecond
	for {
		err := fn(ctx)
		if !errors.Is(err, store.ErrUnavailable) {
			return err
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (gave up: %w)", err, context.Cause(ctx))
		case <-t.C:
		}
		pause = min(2*pause, storeRetryMax)
	}
}

// stopOnRunErr cancels the generation when a write found its run ended elsewhere.
func stopOnRunErr(cancel context.CancelCauseFunc, err error) {
	switch {
	case errors.Is(err, store.ErrRunFinished):
		cancel(errRunCancelled)
	case errors.Is(err, store.ErrNotFound):
		cancel(errRunDeleted)
	}
}

// runSink is the eventSink of a background generation: events go to the run's log, a batch per
// flush (the converter flushes before each upstream read). A write that finds the run ended
// (cancelled, deleted) stops the generation.
type runSink struct {
	runs       *store.Runs
	tenant, id string
	cancel     context.CancelCauseFunc
	pending    [][]byte
	err        error
	renewed    atomic.Int64 // unix nanoseconds of the last write the store took
}

func (r *runSink) queue(events []stream.Event) error {
	if r.err != nil {
		return r.err
	}
	for _, ev := range events {
		r.pending = append(r.pending, stream.AppendEvent(nil, ev))
	}
	if len(r.pending) >= 256 {
		return r.flush()
	}
	return nil
}

func (r *runSink) write(events []stream.Event) error {
	if err := r.queue(events); err != nil {
		return err
	}
	return r.flush()
}

func (r *runSink) flush() error {
	if r.err != nil || len(r.pending) == 0 {
		return r.err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := r.runs.Append(ctx, r.tenant, r.id, r.pending)
	switch {
	case err == nil:
		r.renewed.Store(time.Now().UnixNano())
		r.pending = r.pending[:0]
	case errors.Is(err, store.ErrUnavailable):
		// Kept and sent with the next flush; the heartbeat gives up once the lease has passed.
		return nil
	default:
		r.pending = r.pending[:0]
		stopOnRunErr(r.cancel, err)
		r.err = fmt.Errorf("background event log: %w", err)
	}
	return r.err
}

// take returns the queued events and forgets them.
func (r *runSink) take() [][]byte {
	p := r.pending
	r.pending = nil
	return p
}

// pendingWith returns the queued events followed by events.
func (r *runSink) pendingWith(events []stream.Event) [][]byte {
	return append(r.take(), encodeEvents(events)...)
}

// expiredResponse is the Response of a run whose owner's lease ended: failed.
func expiredResponse(raw []byte) []byte {
	out, err := sjson.SetBytes(raw, "status", store.RunFailed)
	if err != nil {
		return raw
	}
	if out2, err := sjson.SetRawBytes(out, "error", []byte(`{"code":"server_error","message":"The server generating this response stopped before it finished."}`)); err == nil {
		out = out2
	}
	return out
}

// runResponse is the Response object of run as a client reads it.
func runResponse(run *store.Run) []byte {
	if run.Expired {
		return expiredResponse(run.Response)
	}
	return run.Response
}

// loadRun reads a tenant's run: unknown and foreign ids are both store.ErrNotFound.
func (s *Server) loadRun(ctx context.Context, tenant, id string) (*store.Run, error) {
	run, err := s.bg.runs.Get(ctx, tenant, id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return nil, err
	case errors.Is(err, store.ErrUnavailable):
		return nil, fmt.Errorf("get background response %s: %w: %w", id, errStoreUnavailable, err)
	case err != nil:
		return nil, fmt.Errorf("get background response %s: %w", id, err)
	}
	return run, nil
}

// retrieveStream reads whether GET /v1/responses/{id} asks for the event stream and from where:
// the Node SDK asks with ?stream=true&starting_after=N, the Go SDK sends {"stream":true} as the
// body of its GET (and starting_after in the query).
func retrieveStream(r *http.Request) (streamed bool, after int, err error) {
	if r.ContentLength != 0 && r.Body != nil {
		body, rerr := io.ReadAll(io.LimitReader(r.Body, 64<<10))
		if rerr != nil {
			return false, 0, badRequest("", "The request body could not be read.")
		}
		streamed = gjson.GetBytes(body, "stream").Type == gjson.True
	}
	if mt, _, _ := mime.ParseMediaType(r.Header.Get("Accept")); mt == "text/event-stream" {
		streamed = true
	}
	q := r.URL.Query()
	switch v := q.Get("stream"); v {
	case "", "false":
	case "true":
		streamed = true
	default:
		return false, 0, badRequest("stream", "Invalid value for 'stream': expected a boolean.")
	}
	if v := q.Get("include_obfuscation"); v != "" && v != "true" && v != "false" {
		return false, 0, badRequest("include_obfuscation", "Invalid value for 'include_obfuscation': expected a boolean.")
	}
	after = -1
	if q.Has("starting_after") {
		n, perr := strconv.Atoi(q.Get("starting_after"))
		if perr != nil || n < -1 {
			return false, 0, badRequest("starting_after", "Invalid 'starting_after': expected a non-negative integer (an event's sequence_number).")
		}
		if !streamed {
			return false, 0, badRequest("starting_after", "'starting_after' applies only to streamed retrieval ('stream=true').")
		}
		after = n
	}
	return streamed, after, checkIncludeQuery(q)
}

// retrieveStreamed answers GET /v1/responses/{id}?stream=true: a background response's events
// after starting_after, then live until it ends. Another response answers 400 (OpenAI streams
// background responses only).
func (s *Server) retrieveStreamed(w http.ResponseWriter, r *http.Request, id string, after int) {
	ctx := r.Context()
	tenant := middleware.Tenant(ctx)
	if _, err := s.loadRun(ctx, tenant, id); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			if _, cerr := s.loadCheckpoint(r, id); cerr == nil {
				err = badRequest("stream", "This response was not created in background mode; only background responses can be streamed on retrieval. Retrieve it without 'stream'.")
			} else {
				err = cerr
			}
		}
		writeError(w, err)
		return
	}
	s.follow(ctx, w, tenant, id, after)
}

// Follower terminal events. A follower's stream always ends with an event that says why: the
// response's own terminal event (logged by its owner, or the error event a cancel logs), a
// response.failed for a run whose owner's lease ended, or an error event of its own when it
// cannot go on (errorEvent's codes).
const (
	// codeCancelled ends the log of a cancelled response (logged by the cancel).
	codeCancelled = "response_cancelled"
	// codeStoreUnavailable: the follower could not read the shared store for as long as the
	// owner's lease; retryable with starting_after = the event's sequence_number.
	codeStoreUnavailable = "store_unavailable"
	// codeFollowFailed: the store answered something unreadable; retryable as above.
	codeFollowFailed = "server_error"
	// codeNotFound: the response was deleted (or expired) while followed; not retryable.
	codeNotFound = "response_not_found"
)

// errorEvent encodes a Responses stream error event. Its sequence_number is that of the last
// event the client received (after, when none), so that starting_after=sequence_number resumes
// without a gap.
func errorEvent(code, message string, seq int) []byte {
	b, _ := sjson.SetBytes([]byte(`{"type":"error"}`), "code", code)
	b, _ = sjson.SetBytes(b, "message", message)
	b, _ = sjson.SetRawBytes(b, "param", []byte("null"))
	b, _ = sjson.SetBytes(b, "sequence_number", seq)
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}

// cancelledEvent is the event a cancel logs as the last of the response's stream.
func cancelledEvent(seq int) []byte {
	return errorEvent(codeCancelled, "The response was cancelled.", seq)
}

// eventSeq reads the sequence_number of an encoded event (def when it has none).
func eventSeq(ev []byte, def int) int {
	i := bytes.Index(ev, []byte("data: "))
	if i < 0 {
		return def
	}
	if v := gjson.GetBytes(ev[i+len("data: "):], "sequence_number"); v.Type == gjson.Number {
		return int(v.Int())
	}
	return def
}

// follow streams the run's logged events after sequence number after, then new ones as they
// are logged, until the run ends (or its owner's lease does: then a response.failed closes the
// stream) or the client goes. Store reads that fail are retried for as long as the owner's
// lease (a stall the owner rides out, its followers ride out too); past that, or when the
// response is deleted, the stream ends with an error event (errorEvent), never silently.
func (s *Server) follow(ctx context.Context, w http.ResponseWriter, tenant, id string, after int) {
	sink := newSSESink(w)
	f := &follower{s: s, w: w, sink: sink, id: id, last: after}
	next := -1 // the log index to read next; unknown until the run's record says (store.Run.LogIndex)
	for {
		if next < 0 {
			run, err := s.loadRun(ctx, tenant, id)
			if err != nil {
				if f.failed(ctx, err) {
					return
				}
				continue
			}
			idx, ok := run.LogIndex(after)
			if !ok {
				if err := sink.flushNow(); err != nil {
					return
				}
				s.bg.runs.Wait(ctx, tenant, id, followPoll)
				if ctx.Err() != nil {
					return
				}
				continue
			}
			next = idx
		}
		evs, err := s.bg.runs.Events(ctx, tenant, id, next, 512)
		if err != nil {
			if f.failed(ctx, err) {
				return
			}
			continue
		}
		f.ok()
		if len(evs) > 0 {
			if err := sink.writeRaw(evs); err != nil {
				return // client gone
			}
			next += len(evs)
			f.last = eventSeq(evs[len(evs)-1], f.last+len(evs))
			continue
		}
		run, err := s.loadRun(ctx, tenant, id)
		if err != nil {
			if f.failed(ctx, err) {
				return
			}
			continue
		}
		f.ok()
		if store.RunFinished(run.Status) {
			if evs, err := s.bg.runs.Events(ctx, tenant, id, next, 1); err == nil && len(evs) > 0 {
				continue // logged with its end: drain
			}
			if run.Expired && next <= run.Events {
				ev := []byte("event: response.failed\ndata: {\"type\":\"response.failed\",\"sequence_number\":")
				ev = strconv.AppendInt(ev, int64(run.NextSeq()), 10)
				ev = append(ev, `,"response":`...)
				ev = append(ev, expiredResponse(run.Response)...)
				ev = append(ev, "}\n\n"...)
				_ = sink.writeRaw([][]byte{ev})
			}
			_ = sink.flush()
			if !sink.hdr {
				_ = sink.flushNow() // an empty stream (starting_after at the end) is still a stream
			}
			return
		}
		if err := sink.flushNow(); err != nil { // headers out while waiting
			return
		}
		s.bg.runs.Wait(ctx, tenant, id, followPoll)
		if ctx.Err() != nil {
			return
		}
	}
}

// follower keeps a follow's state across store failures.
type follower struct {
	s    *Server
	w    http.ResponseWriter
	sink *sseSink
	id   string
	last int // the sequence number of the last event sent (the starting_after to resume from)

	down  time.Time     // when the current run of store failures began (zero: none)
	pause time.Duration // before the next try
}

// ok records a store read that succeeded.
func (f *follower) ok() { f.down, f.pause = time.Time{}, 0 }

// failed handles a store read that failed: it reports whether the follow ends (the client is
// gone, or the error was answered: an error before any event, else an error event); otherwise
// it has paused and the read is to be tried again.
func (f *follower) failed(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true // client gone
	}
	if errors.Is(err, store.ErrNotFound) {
		if !f.sink.hdr {
			writeError(f.w, notFound(f.id))
			return true
		}
		f.end(codeNotFound, fmt.Sprintf("Response '%s' was deleted while it was streamed.", f.id), err)
		return true
	}
	transient := errors.Is(err, store.ErrUnavailable) || errors.Is(err, errStoreUnavailable)
	now := time.Now()
	if f.down.IsZero() {
		f.down = now
		if transient {
			f.s.log.Warn("background follower: the store did not answer; retrying", "response_id", f.id, "for", f.s.bg.runs.Lease(), "err", err)
		}
	}
	if !transient || now.Sub(f.down) >= f.s.bg.runs.Lease() {
		if !f.sink.hdr {
			writeError(f.w, err)
			return true
		}
		if transient {
			f.end(codeStoreUnavailable, "The response store did not answer; the response may still be generating. Retry with starting_after set to this event's sequence_number.", err)
		} else {
			f.end(codeFollowFailed, "The response's events could not be read. Retry with starting_after set to this event's sequence_number.", err)
		}
		return true
	}
	f.pause = min(max(2*f.pause, 50*time.Millisecond), storeRetryMax)
	t := time.NewTimer(f.pause)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return true
	case <-t.C:
	}
	return false
}

// end sends the error event that ends a follow the follower itself could not continue.
func (f *follower) end(code, message string, err error) {
	f.s.log.Warn("background follower ended with an error event", "response_id", f.id, "code", code, "after", f.last, "err", err)
	_ = f.sink.writeRaw([][]byte{errorEvent(code, message, f.last)})
}

// handleCancel answers POST /v1/responses/{id}/cancel: an unfinished background response ends
// as cancelled (its generation stops, nothing is stored or advanced, its stream ends with an
// error event, code response_cancelled) and is returned; a finished one is returned as it ended
// (cancelling is idempotent, as OpenAI answers); a response not created in background mode is a
// 400; an unknown or another tenant's id a 404. The decision is the store's (store.Runs.Cancel
// against the owner's Settle): a cancel that comes once the owner is storing the finished
// response waits for its end and answers that, so "cancelled" is only ever answered for a
// response that stays cancelled, on every pod.
func (s *Server) handleCancel(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tenant, id := middleware.Tenant(ctx), chi.URLParam(r, "id")
	run, changed, err := s.bg.runs.Cancel(ctx, tenant, id, func(resp []byte) []byte {
		if out, err := sjson.SetBytes(resp, "status", store.RunCancelled); err == nil {
			return out
		}
		return resp
	}, cancelledEvent)
	switch {
	case errors.Is(err, store.ErrNotFound):
		if _, cerr := s.loadCheckpoint(r, id); cerr != nil {
			writeError(w, cerr)
			return
		}
		writeError(w, badRequest("", "Only responses created with 'background' set to true can be cancelled."))
		return
	case errors.Is(err, store.ErrUnavailable):
		writeError(w, fmt.Errorf("cancel %s: %w: %w", id, errStoreUnavailable, err))
		return
	case err != nil:
		writeError(w, fmt.Errorf("cancel %s: %w", id, err))
		return
	}
	if changed {
		s.bg.stop(runKey(tenant, id), errRunCancelled) // at once when it runs here; else its owner's next write
		writeJSON(w, json.RawMessage(runResponse(run)))
		return
	}
	for !store.RunFinished(run.Status) { // its owner is storing it: answer how it ends
		s.bg.runs.Wait(ctx, tenant, id, followPoll)
		if run, err = s.loadRun(ctx, tenant, id); err != nil {
			switch {
			case ctx.Err() != nil: // client gone
			case errors.Is(err, store.ErrNotFound): // deleted meanwhile
				writeError(w, notFound(id))
			default: // not acknowledged: a retry answers the same run
				writeError(w, fmt.Errorf("cancel %s: wait for its end: %w", id, err))
			}
			return
		}
	}
	// Finished: answered as a retrieve answers it (the stored response first).
	if cp, err := s.loadCheckpoint(r, id); err == nil {
		writeJSON(w, cp.Response)
		return
	}
	writeJSON(w, json.RawMessage(runResponse(run)))
}
