package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/stitchllm/stitch/middleware"
	"github.com/stitchllm/stitch/store"
)

// Defaults of Limits.
const (
	defaultPersistConcurrency  = 64
	defaultPersistQueueTimeout = 60 * time.Second
	// verifyTimeout bounds the read-back that asks whether a write which reported failure landed.
	verifyTimeout = 5 * time.Second
	// retryAfterSeconds is the Retry-After sent with 429: generations last seconds, so a second
	// is a fair first back-off.
	retryAfterSeconds = 1
)

// guards is the server's admission state: generation slots, persist slots and their metrics.
type guards struct {
	generations chan struct{} // nil: unbounded
	persists    chan struct{}
	queueWait   time.Duration
	rejected    *prometheus.CounterVec
	recovered   *prometheus.CounterVec
}

func newGuards(lim Limits, reg prometheus.Registerer) *guards {
	g := &guards{queueWait: lim.PersistQueueTimeout}
	if lim.MaxConcurrentResponses > 0 {
		g.generations = make(chan struct{}, lim.MaxConcurrentResponses)
	}
	n := lim.PersistConcurrency
	if n <= 0 {
		n = defaultPersistConcurrency
	}
	g.persists = make(chan struct{}, n)
	if g.queueWait <= 0 {
		g.queueWait = defaultPersistQueueTimeout
	}
	g.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stitch_admission_rejected_total",
		Help: "Requests refused with 429 before any work, by reason (concurrency: --max-concurrent-responses).",
	}, []string{"reason"})
	g.recovered = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "stitch_persist_recovered_total",
		Help: "Checkpoint writes that reported an error but were found stored (found) or succeeded on retry (retried).",
	}, []string{"how"})
	reg.MustRegister(g.rejected, g.recovered)
	return g
}

// tryAdmit takes a generation slot, or answers 429 with Retry-After and reports false.
func (g *guards) tryAdmit(w http.ResponseWriter) (release func(), ok bool) {
	if g.generations == nil {
		return func() {}, true
	}
	select {
	case g.generations <- struct{}{}:
		return func() { <-g.generations }, true
	default:
	}
	g.rejected.WithLabelValues("concurrency").Inc()
	w.Header().Set("Retry-After", strconv.Itoa(retryAfterSeconds))
	middleware.WriteError(w, http.StatusTooManyRequests, "server_error", "", "rate_limit_exceeded",
		fmt.Sprintf("This server is running its maximum of %d concurrent responses; retry shortly.", cap(g.generations)))
	return nil, false
}

// errPersistBusy marks a checkpoint write that never started: every persist slot stayed taken.
var errPersistBusy = errors.New("no persist slot free in time")

// persistDurably writes the checkpoint with a budget of its own: it first waits for one of the
// bounded persist slots (queueing does not eat the write's deadline, as it did at 2,048
// concurrent conversations), then writes. A write that reports an error may still have landed (a
// reply lost to a deadline), so before the client is told "failed" the record is read back; a
// write found missing is retried once, and a final failure deletes whatever partly landed, so a
// response reported failed is never found stored later.
func (s *Server) persistDurably(ctx context.Context, t *turn, out *output) error {
	qctx, cancel := context.WithTimeout(ctx, s.guards.queueWait)
	select {
	case s.guards.persists <- struct{}{}:
		cancel()
	case <-qctx.Done():
		cancel()
		return fmt.Errorf("persist %s: %w (waited %v)", out.responseID(), errPersistBusy, s.guards.queueWait)
	}
	defer func() { <-s.guards.persists }()

	err := s.persist(ctx, t, out)
	if err == nil {
		return nil
	}
	id := out.responseID()
	if s.storedIntact(ctx, t.tenant, id) {
		s.guards.recovered.WithLabelValues("found").Inc()
		t.log.Warn("persist reported an error but the response is stored", "response_id", id, "err", err)
		return nil
	}
	if err2 := s.persist(ctx, t, out); err2 == nil {
		s.guards.recovered.WithLabelValues("retried").Inc()
		t.log.Warn("persist succeeded on retry", "response_id", id, "first_err", err)
		return nil
	}
	dctx, dcancel := context.WithTimeout(ctx, verifyTimeout)
	defer dcancel()
	if derr := s.opts.Checkpoints.DeleteResponse(dctx, t.tenant, id); derr != nil && !errors.Is(derr, store.ErrNotFound) {
		t.log.Error("could not remove a response reported failed; it may be found stored later", "response_id", id, "err", derr)
	}
	return err
}

// storedIntact reports whether the checkpoint id and every item it names can be read back.
func (s *Server) storedIntact(ctx context.Context, tenant, id string) bool {
	vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	cp, err := s.opts.Checkpoints.GetResponse(vctx, tenant, id)
	if err != nil || cp == nil || cp.ID != id {
		return false
	}
	ids := append(append([]string(nil), cp.InputItemIDs...), cp.OutputItemIDs...)
	if len(ids) == 0 {
		return true
	}
	items, err := s.opts.Checkpoints.GetItems(vctx, tenant, ids)
	return err == nil && len(items) == len(ids)
}
