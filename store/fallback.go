package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// FallbackOptions configures a Fallback. The zero value is ready to use.
type FallbackOptions struct {
	// Logger receives outages, replays and re-publications (ids only, no
	// tenant data). Nil discards.
	Logger *slog.Logger
	// SyncInterval is how often the background loop runs Sync: replaying the
	// queue, following deletions, checking whether Redis lost its data. Zero
	// means one second; negative disables the loop (call Sync yourself).
	SyncInterval time.Duration
	// Now is the clock for expiries. Nil means time.Now.
	Now func() time.Time
	// Lease is how long each successful Sync lets this pod vouch, to the
	// other pods, that everything it acknowledged is in the shared store (see
	// redis_leases.go); it is also the longest a response whose write was
	// queued waits before it is acknowledged. Zero means 3 seconds (three
	// syncs at the default interval).
	Lease time.Duration
	// Settle is how long after this pod last saw the shared store fail (an
	// error, a restart or failover it noticed) a miss is answered
	// ErrUnavailable rather than ErrNotFound: long enough for every pod to
	// notice the same trouble and re-publish. Zero means 5 seconds; negative
	// disables it (leases alone decide).
	Settle time.Duration
	// PresumedGone is how long after its lease expired a pod that stopped
	// renewing it (killed, or cut off from Redis) still makes misses
	// ErrUnavailable: it may hold queued responses that a restart would
	// replay. Zero means 60 seconds.
	PresumedGone time.Duration
}

// Fallback is the multi-pod checkpoint store: every response goes to the
// shared store (Redis, the source of truth across pods) and to this pod's
// local Bolt file, which also holds a durable replay queue. Promises, per
// failure (see docs/operator-guide.md, "Durability"):
//
//   - Redis unavailable: writes land locally and are queued in the same
//     transaction; reads of what this pod holds are served locally; anything
//     else is ErrUnavailable (503), never a wrong answer. Sync replays the
//     queue once Redis answers again.
//   - Pod restarted during the outage: the queue is in the Bolt file, so the
//     new process replays it.
//   - Redis restarted without persistence (or flushed): a read Redis answers
//     "not found" that this pod holds is served locally and re-published at
//     once; and Sync notices the lost epoch key and re-publishes every local
//     copy (and tombstone), so other pods read them too.
//   - Deletes are tombstones in both tiers. Redis announces each on a stream
//     that every pod's Sync follows, dropping its local copy; a replay or
//     re-publication never resurrects a deleted id.
//   - A miss is ErrNotFound only when proven: no trouble seen by this pod
//     within Settle, and every other pod's lease vouching that all it
//     acknowledged is in Redis (redis_leases.go). Otherwise (a write queued on
//     another pod, Redis restarted or failed over and maybe lost its last
//     writes, a pod cut off) the miss is ErrUnavailable: 503, retry. Redis
//     restarts and failovers (Sync compares the servers' run_ids) and any
//     failure make each pod re-publish the writes it acknowledged shortly
//     before, which Redis may have lost (AOF's unsynced second, a replica not
//     yet caught up), before its lease vouches again.
//
// Local copies expire with the shared store's TTL (counted from CreatedAt).
// It is safe for concurrent use. Close stops the background loop.
type Fallback struct {
	shared   *RedisCheckpoints
	local    *Bolt
	logger   *slog.Logger
	now      func() time.Time
	counters checkpointCounters
	queued   atomic.Int64

	syncMu  sync.Mutex // one Sync at a time
	failing bool       // under syncMu: the last Sync failed (log transitions only)

	pod                 string        // this pod's lease name, kept in the local store
	lease, settle, gone time.Duration // FallbackOptions.Lease, Settle, PresumedGone
	enqueues            atomic.Uint64 // shared writes that failed (queued or about to be)
	unproven            atomic.Uint64 // misses answered ErrUnavailable
	mu                  sync.Mutex    // guards the fields below
	vouchUntil          time.Time     // this pod's lease vouches until then (conservative)
	troubleAt           time.Time     // the shared store last failed (or restarted) then
	republishFrom       time.Time     // journal entries since then await re-publication (zero: none)
	lastGood            time.Time     // start of the last Sync that succeeded
	fingerprint         string        // the shared store's fingerprint at lastGood
	journal             []journalEntry
	journalDropped      bool

	stop      context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// NewFallback returns a Fallback over shared and local, which the caller
// owns (close them after the Fallback), and starts its Sync loop.
func NewFallback(shared *RedisCheckpoints, local *Bolt, opts FallbackOptions) *Fallback {
	if shared == nil || local == nil {
		panic("store: NewFallback needs a shared and a local store")
	}
	f := &Fallback{shared: shared, local: local, logger: opts.Logger, now: opts.Now, done: make(chan struct{}),
		lease: opts.Lease, settle: opts.Settle, gone: opts.PresumedGone}
	if f.logger == nil {
		f.logger = slog.New(slog.DiscardHandler)
	}
	if f.now == nil {
		f.now = time.Now
	}
	if f.lease <= 0 {
		f.lease = 3 * time.Second
	}
	if f.settle == 0 {
		f.settle = 5 * time.Second
	}
	if f.gone <= 0 {
		f.gone = time.Minute
	}
	f.pod = f.podName()
	n, err := local.queueLen()
	if err != nil {
		f.logger.Error("read the replay queue", "err", err)
	}
	f.queued.Store(int64(n))
	if n > 0 {
		f.logger.Warn("responses written during a shared-store outage wait for replay", "queued", n)
	}
	ctx, stop := context.WithCancel(context.Background())
	f.stop = stop
	if opts.SyncInterval < 0 {
		close(f.done)
		return f
	}
	interval := opts.SyncInterval
	if interval == 0 {
		interval = time.Second
	}
	go f.loop(ctx, interval)
	return f
}

// Close stops the Sync loop and waits for it. It does not close the stores.
func (f *Fallback) Close() error {
	f.closeOnce.Do(func() {
		f.stop()
		<-f.done
		// Nothing queued: this pod holds nothing the others lack, so its lease
		// stops counting now rather than when presumed gone.
		if f.queued.Load() == 0 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if err := f.shared.dropLease(ctx, f.pod); err != nil {
				f.logger.Warn("pod lease not dropped", "err", err)
			}
			cancel()
		}
	})
	return nil
}

func (f *Fallback) loop(ctx context.Context, interval time.Duration) {
	defer close(f.done)
	t := time.NewTicker(interval)
	defer t.Stop()
	// At once, not an interval later: a new pod records the shared store's epoch before it
	// writes much (one that never recorded an epoch cannot tell that Redis lost what it wrote),
	// and a restarted pod replays its queue without waiting.
	_ = f.Sync(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = f.Sync(ctx)
		}
	}
}

// PutResponse is PutResponseHistory without history: earlier items this pod
// lacks are fetched from the shared store (best effort).
func (f *Fallback) PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error {
	return f.PutResponseHistory(ctx, cp, items, nil)
}

// PutResponseHistory writes to the shared store, then the local copy. When
// the local store lacks earlier items of the conversation (earlier turns
// were served by other pods), history is written locally too, so the local
// copy can be continued alone. With the shared store unavailable the write
// still succeeds (durable on this pod) and is queued for replay.
func (f *Fallback) PutResponseHistory(ctx context.Context, cp *Checkpoint, items, history []Item) error {
	if err := checkPut(cp, items); err != nil {
		return err
	}
	local := items
	if missing := f.missingLocally(ctx, cp, items); len(missing) > 0 {
		if len(history) == 0 {
			var err error
			if history, err = f.shared.GetItems(ctx, cp.Tenant, missing); err != nil {
				f.logger.Warn("earlier items not copied to the local store", "response_id", cp.ID, "err", err)
				history = nil
			}
		}
		local = append(slices.Clip(items), history...)
	}
	err := f.shared.PutResponse(ctx, cp, items)
	switch {
	case err == nil:
		if lerr := f.local.put(ctx, cp, local, false); lerr != nil {
			// Stored in Redis: durable, but this pod cannot serve it in an outage.
			f.logger.Warn("local copy not written", "response_id", cp.ID, "err", lerr)
		}
		f.remember(cp.Tenant, cp.ID, false)
		return nil
	case errors.Is(err, ErrUnavailable) && ctx.Err() == nil:
		// Counted before the local write: a Sync that read the count before this
		// failure must not renew a vouching lease after it.
		f.enqueues.Add(1)
		f.trouble()
		if lerr := f.local.put(ctx, cp, local, true); lerr != nil {
			return fmt.Errorf("%w; and the local store: %v", err, lerr)
		}
		n := f.queued.Add(1)
		f.logger.Warn("shared store unavailable: response kept on this pod and queued", "response_id", cp.ID, "queued", n)
		f.awaitLeaseEnd(ctx)
		return nil
	}
	f.noteErr(err)
	return err
}

// missingLocally returns the ids of cp's conversation that are not among
// items, when the local store lacks any of them (nil when it has them all).
func (f *Fallback) missingLocally(ctx context.Context, cp *Checkpoint, items []Item) []string {
	written := make(map[string]bool, len(items))
	for _, it := range items {
		written[it.ID] = true
	}
	var earlier []string
	for _, id := range cp.ConversationItemIDs {
		if !written[id] {
			earlier = append(earlier, id)
		}
	}
	if len(earlier) == 0 {
		return nil
	}
	if _, err := f.local.GetItems(ctx, cp.Tenant, earlier); err == nil {
		return nil
	}
	return earlier
}

// remaining is how long cp has left to live in the shared store.
func (f *Fallback) remaining(cp *Checkpoint) time.Duration {
	return cp.CreatedAt.Add(f.shared.ttl).Sub(f.now())
}

// localResponse reads the local copy, treating one past the shared TTL as
// gone.
func (f *Fallback) localResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	cp, err := f.local.GetResponse(ctx, tenant, id)
	if err == nil && f.remaining(cp) <= 0 {
		return nil, fmt.Errorf("get response %q: expired: %w", truncate(id), ErrNotFound)
	}
	return cp, err
}

// GetResponse reads the shared store. When it answers not found for a
// response this pod holds (Redis forgot it), the local copy is served and
// re-published; when it is unavailable, the local copy is served. A
// tombstone in either store wins.
func (f *Fallback) GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	cp, err := f.shared.GetResponse(ctx, tenant, id)
	switch {
	case err == nil:
		return cp, nil
	case errors.Is(err, ErrDeleted):
		if aerr := f.local.applyDeletions(ctx, []deletion{{tenant, id}}, ""); aerr != nil {
			f.logger.Warn("local copy of a deleted response not dropped", "response_id", id, "err", aerr)
		}
		return nil, err
	case errors.Is(err, ErrNotFound):
		local, lerr := f.localResponse(ctx, tenant, id)
		if lerr != nil {
			if errors.Is(err, ErrCorrupt) || errors.Is(lerr, ErrDeleted) {
				return nil, err // unreadable for good, or deleted here: no write can cure it
			}
			if checkKey(tenant, id) != nil {
				return nil, err // never storable: a definite miss
			}
			return confirmMiss(ctx, f, err, func() (*Checkpoint, error) { return f.shared.GetResponse(ctx, tenant, id) })
		}
		f.counters.localReads.Add(1)
		if perr := f.republish(ctx, local); errors.Is(perr, ErrDeleted) {
			return nil, perr
		} else if perr != nil {
			f.logger.Warn("re-publish the local copy", "response_id", id, "err", perr)
		}
		return local, nil
	case errors.Is(err, ErrUnavailable):
		f.noteErr(err)
		local, lerr := f.localResponse(ctx, tenant, id)
		if errors.Is(lerr, ErrDeleted) {
			return nil, lerr
		}
		if lerr != nil {
			return nil, err // the shared store's unavailability is the answer that matters
		}
		f.counters.localReads.Add(1)
		f.logger.Warn("shared store unavailable: serving the local checkpoint", "response_id", id)
		return local, nil
	}
	return nil, err
}

// republish writes a local copy, with its whole conversation, back to the
// shared store for the rest of its life.
func (f *Fallback) republish(ctx context.Context, cp *Checkpoint) error {
	ttl := f.remaining(cp)
	if ttl <= 0 {
		return nil
	}
	items, err := f.local.GetItems(ctx, cp.Tenant, cp.ConversationItemIDs)
	if err != nil {
		return fmt.Errorf("republish %q: %w", cp.ID, err)
	}
	err = f.shared.put(ctx, cp, items, ttl)
	if errors.Is(err, ErrDeleted) {
		_ = f.local.applyDeletions(ctx, []deletion{{cp.Tenant, cp.ID}}, "")
	}
	if err == nil {
		f.counters.republished.Add(1)
	}
	return err
}

// GetItems reads the shared store, or the local copy when the shared store
// is unavailable or lacks (or holds corrupt) items this pod has.
func (f *Fallback) GetItems(ctx context.Context, tenant string, ids []string) ([]Item, error) {
	items, err := f.shared.GetItems(ctx, tenant, ids)
	if err == nil || (!errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrNotFound)) {
		return items, err
	}
	f.noteErr(err)
	local, lerr := f.local.GetItems(ctx, tenant, ids)
	if lerr != nil {
		if errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCorrupt) && storableIDs(tenant, ids) {
			return confirmMiss(ctx, f, err, func() ([]Item, error) { return f.shared.GetItems(ctx, tenant, ids) })
		}
		return nil, err
	}
	f.counters.localReads.Add(1)
	return local, nil
}

// DeleteResponse tombstones id in the shared store (announcing it to every
// pod) and locally. With the shared store unavailable, a response this pod
// holds is tombstoned locally and the delete queued; one it does not hold is
// ErrUnavailable.
func (f *Fallback) DeleteResponse(ctx context.Context, tenant, id string) error {
	_, lerr := f.local.GetResponse(ctx, tenant, id)
	held := lerr == nil
	existed, err := f.shared.deleteResponse(ctx, tenant, id, held)
	if err == nil && !existed && !held && checkKey(tenant, id) == nil {
		// Perhaps queued on another pod: delete again once proven absent, in
		// case it landed meanwhile.
		_, perr := confirmMiss(ctx, f, nil, func() (bool, error) {
			existed, err = f.shared.deleteResponse(ctx, tenant, id, false)
			return existed, err
		})
		if perr != nil {
			return perr
		}
	}
	switch {
	case err == nil && !existed && !held:
		return fmt.Errorf("delete response %q: %w", truncate(id), ErrNotFound)
	case err == nil:
		// Tombstoned here too, held or not: if Redis later loses its data,
		// this pod's re-publication re-posts the tombstone.
		if derr := f.local.markDeleted(ctx, tenant, id); derr != nil {
			f.logger.Warn("local tombstone not written", "response_id", id, "err", derr)
		}
		f.remember(tenant, id, true)
		return nil
	case errors.Is(err, ErrUnavailable) && held && ctx.Err() == nil:
		f.enqueues.Add(1)
		f.trouble()
		if derr := f.local.delete(ctx, tenant, id, true); derr != nil {
			return fmt.Errorf("%w; and the local store: %v", err, derr)
		}
		n := f.queued.Add(1)
		f.logger.Warn("shared store unavailable: delete applied on this pod and queued", "response_id", id, "queued", n)
		return nil
	}
	f.noteErr(err)
	return err
}

// confirmMiss decides a miss: when it cannot be proven (proveAbsent), the
// answer is ErrUnavailable (503: retry) instead of miss; when it can, the
// store is read again (reread) and that answer returned, so a write replayed
// between the first read and the proof is found.
func confirmMiss[T any](ctx context.Context, f *Fallback, miss error, reread func() (T, error)) (T, error) {
	if err := f.proveAbsent(ctx); err != nil {
		var zero T
		f.unproven.Add(1)
		if miss != nil {
			err = fmt.Errorf("%w (the store answered: %v)", err, miss)
		}
		return zero, err
	}
	return reread()
}

// proveAbsent returns nil when a miss in the shared store is definite: this
// pod saw no trouble within Settle, and every other pod's lease vouches that
// what it acknowledged is in the shared store. Else an error wrapping
// ErrUnavailable (never ErrNotFound: callers check that first) saying why.
func (f *Fallback) proveAbsent(ctx context.Context) error {
	f.mu.Lock()
	since := time.Since(f.troubleAt)
	troubled := !f.troubleAt.IsZero() && f.settle > 0 && since < f.settle
	f.mu.Unlock()
	if troubled {
		return fmt.Errorf("not found, but the shared store failed %v ago and a response written meanwhile may not be replayed yet: %w",
			since.Round(time.Millisecond), ErrUnavailable)
	}
	pods, err := f.shared.unvouched(ctx, f.pod, f.gone)
	if err != nil {
		f.noteErr(err)
		return fmt.Errorf("not found, and the pods' leases cannot be read: %w", err)
	}
	if len(pods) > 0 {
		return fmt.Errorf("not found, but %d pod(s) (%s) may hold queued responses: %w",
			len(pods), truncate(strings.Join(pods, ",")), ErrUnavailable)
	}
	return nil
}

// storableIDs reports whether every id could have been stored for tenant (a
// malformed one is a definite miss).
func storableIDs(tenant string, ids []string) bool {
	if !validTenant(tenant) {
		return false
	}
	for _, id := range ids {
		if !validStoredID(id) {
			return false
		}
	}
	return true
}

// noteErr records trouble when err says the shared store did not answer.
func (f *Fallback) noteErr(err error) {
	if errors.Is(err, ErrUnavailable) {
		f.trouble()
	}
}

// trouble records that the shared store failed now: misses are not trusted
// for Settle, and the writes acknowledged since shortly before the last good
// Sync are re-published once it answers again (it may have lost them).
func (f *Fallback) trouble() {
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.troubleAt = now
	if f.republishFrom.IsZero() {
		f.republishFrom = f.lastGood.Add(-journalMargin)
	}
}

// journalMargin is how far before the last good Sync the journal is
// re-published after trouble: Redis with appendfsync everysec loses up to
// about two seconds of acknowledged writes when killed, and a cluster replica
// promoted in a failover lacks what its master had not sent it yet.
const journalMargin = 5 * time.Second

// maxJournal bounds the journal (entries since shortly before the last good
// Sync; it only grows while writes succeed and syncs fail).
const maxJournal = 200_000

// journalEntry is a write the shared store acknowledged.
type journalEntry struct {
	at      time.Time
	tenant  string
	id      string
	deleted bool
}

// remember journals a write the shared store acknowledged.
func (f *Fallback) remember(tenant, id string, deleted bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.journal) >= maxJournal {
		f.journal = f.journal[1:]
		if !f.journalDropped {
			f.journalDropped = true
			f.logger.Warn("write journal full: a Redis restart now may lose responses it acknowledged", "entries", maxJournal)
		}
	}
	f.journal = append(f.journal, journalEntry{at: time.Now(), tenant: tenant, id: id, deleted: deleted})
}

// awaitLeaseEnd waits until this pod's lease no longer vouches for it (or ctx
// ends): a queued response is acknowledged only once no other pod can take
// its absence from the shared store for a definite "not found".
func (f *Fallback) awaitLeaseEnd(ctx context.Context) {
	for {
		f.mu.Lock()
		until := f.vouchUntil
		f.mu.Unlock()
		wait := time.Until(until)
		if wait <= 0 {
			return
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// metaPodID names the lease this pod's data dir holds (kept across restarts,
// so a restarted pod takes over the lease of the process it replaces).
var metaPodID = []byte("pod_id")

// podName returns this pod's lease name, creating it on first use.
func (f *Fallback) podName() string {
	if id, err := f.local.meta(metaPodID); err == nil && id != "" {
		return id
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	id := hex.EncodeToString(b[:])
	if err := f.local.setMeta(metaPodID, id); err != nil {
		f.logger.Warn("pod id not kept in the local store", "err", err)
	}
	return id
}

// Sync brings the shared store up to date with this pod and back: it
// replays the queue, applies deletions announced by other pods to the local
// copies, and, when the shared store's epoch changed (it lost its data),
// re-publishes every local tombstone and copy. It returns the first error
// (ErrUnavailable while Redis is down); the background loop calls it every
// SyncInterval, and tests call it to synchronise without sleeping.
func (f *Fallback) Sync(ctx context.Context) error {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	start := time.Now()
	enqueues := f.enqueues.Load()
	fp, err := f.shared.fingerprint(ctx)
	if err == nil {
		f.mu.Lock()
		changed := f.fingerprint != "" && f.fingerprint != fp
		f.mu.Unlock()
		if changed {
			f.logger.Warn("the shared store restarted or failed over: re-publishing this pod's recent writes")
			f.trouble()
		}
		err = f.replay(ctx)
	}
	if err == nil {
		err = f.followDeletions(ctx)
	}
	if err == nil {
		err = f.republishIfForgotten(ctx)
	}
	if err == nil {
		err = f.republishJournal(ctx)
	}
	if err == nil {
		err = f.renewLease(ctx, enqueues)
	}
	switch {
	case err != nil && !f.failing:
		f.logger.Warn("shared store sync failed; retrying", "err", err)
	case err == nil && f.failing:
		f.logger.Info("shared store sync recovered", "queued", f.queued.Load())
	}
	f.failing = err != nil
	if err != nil {
		f.noteErr(err)
		return err
	}
	f.mu.Lock()
	f.lastGood, f.fingerprint = start, fp
	f.trimJournal()
	f.mu.Unlock()
	return nil
}

// renewLease renews this pod's lease: vouching when nothing it acknowledged
// is missing from the shared store (queue empty, no write failed since this
// Sync began, the journal re-published after any trouble), else not.
func (f *Fallback) renewLease(ctx context.Context, enqueues uint64) error {
	f.mu.Lock()
	settled := f.republishFrom.IsZero()
	f.mu.Unlock()
	settled = settled && f.queued.Load() == 0 && f.enqueues.Load() == enqueues
	left, err := f.shared.renewLease(ctx, f.pod, f.lease, settled)
	if err != nil {
		if settled {
			// The script may have run and only its reply been lost: Redis may vouch for this
			// pod until now+lease, so a queued response must wait that long too.
			f.mu.Lock()
			if until := time.Now().Add(f.lease); until.After(f.vouchUntil) {
				f.vouchUntil = until
			}
			f.mu.Unlock()
		}
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	// Counted from the reply: Redis's expiry is at most this far from when
	// it ran the script, which was before now.
	if until := time.Now().Add(left); left > 0 && until.After(f.vouchUntil) {
		f.vouchUntil = until
	} else if left <= 0 {
		f.vouchUntil = time.Time{}
	}
	return nil
}

// republishJournal re-publishes the writes acknowledged since republishFrom
// (set by trouble), then clears it.
func (f *Fallback) republishJournal(ctx context.Context) error {
	f.mu.Lock()
	from := f.republishFrom
	var todo []journalEntry
	if !from.IsZero() {
		for _, e := range f.journal {
			if !e.at.Before(from) {
				todo = append(todo, e)
			}
		}
	}
	f.mu.Unlock()
	if from.IsZero() {
		return nil
	}
	for _, e := range todo {
		if err := f.republishRef(ctx, localRef{tenant: e.tenant, id: e.id, deleted: e.deleted}); err != nil {
			return err
		}
	}
	if len(todo) > 0 {
		f.logger.Info("re-published the writes acknowledged around the shared store's trouble", "records", len(todo))
	}
	f.mu.Lock()
	if f.republishFrom.Equal(from) {
		f.republishFrom = time.Time{}
	}
	f.mu.Unlock()
	return nil
}

// trimJournal drops entries too old to need re-publishing after the next
// trouble (under mu).
func (f *Fallback) trimJournal() {
	keep := f.lastGood.Add(-journalMargin)
	if !f.republishFrom.IsZero() && f.republishFrom.Before(keep) {
		keep = f.republishFrom
	}
	i := 0
	for i < len(f.journal) && f.journal[i].at.Before(keep) {
		i++
	}
	if i > 0 {
		f.journal = slices.Delete(f.journal, 0, i)
	}
}

const replayPage = 100

// replay delivers the queued writes and deletes, oldest first, stopping at
// the first the shared store cannot take now.
func (f *Fallback) replay(ctx context.Context) error {
	total := 0
	for {
		ops, err := f.local.queued(ctx, replayPage)
		if err != nil {
			return err
		}
		if len(ops) == 0 {
			f.queued.Store(0)
			if total > 0 {
				f.logger.Info("shared store back: queued operations replayed", "count", total)
			}
			return nil
		}
		var last uint64
		var stopErr error
		done := 0
		for _, op := range ops {
			if err := f.replayOne(ctx, op); err != nil {
				stopErr = err
				break
			}
			last = op.seq
			done++
		}
		if done > 0 {
			if err := f.local.dequeue(last); err != nil {
				return err
			}
			f.queued.Add(-int64(done))
			total += done
		}
		if stopErr != nil {
			return stopErr
		}
	}
}

// replayOne delivers op. It returns an error only when the shared store
// cannot take it now (the op stays queued); anything final is counted.
func (f *Fallback) replayOne(ctx context.Context, op replayOp) error {
	if op.delete {
		_, err := f.shared.deleteResponse(ctx, op.tenant, op.id, true)
		if errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
			return err
		}
		if err != nil {
			f.counters.dropped.Add(1)
			f.logger.Error("replay a queued delete", "response_id", op.id, "err", err)
			return nil
		}
		f.counters.replayed.Add(1)
		return nil
	}
	cp, err := f.local.GetResponse(ctx, op.tenant, op.id)
	if err == nil {
		err = f.republish(ctx, cp)
	}
	switch {
	case errors.Is(err, ErrUnavailable) || ctx.Err() != nil:
		return err
	case err == nil:
		f.counters.replayed.Add(1)
	case errors.Is(err, ErrNotFound): // deleted meanwhile (here or elsewhere), or expired
		f.counters.dropped.Add(1)
	default:
		f.counters.dropped.Add(1)
		f.logger.Error("replay a queued response", "response_id", op.id, "err", err)
	}
	return nil
}

// followDeletions applies the deletions other pods announced since the
// last applied one.
func (f *Fallback) followDeletions(ctx context.Context) error {
	cursor, err := f.local.meta(metaDeletionsCursor)
	if err != nil {
		return err
	}
	for {
		dels, next, err := f.shared.deletionsAfter(ctx, cursor, 1000)
		if err != nil || next == "" {
			return err
		}
		if err := f.local.applyDeletions(ctx, dels, next); err != nil {
			return err
		}
		f.counters.deletionsFollowed.Add(uint64(len(dels)))
		cursor = next
	}
}

// republishIfForgotten re-publishes every local tombstone, then every local
// copy, when the shared store's epoch is not the one this pod last
// re-published to. A pod that never recorded an epoch (first start) only
// records it.
func (f *Fallback) republishIfForgotten(ctx context.Context) error {
	epoch, err := f.shared.epoch(ctx)
	if err != nil {
		return err
	}
	seen, err := f.local.meta(metaEpoch)
	if err != nil || seen == epoch {
		return err
	}
	if seen != "" {
		f.logger.Warn("the shared store lost its data (epoch changed): re-publishing this pod's copies")
		n := 0
		for _, tombstones := range []bool{true, false} {
			var after []byte
			for {
				refs, next, err := f.local.scan(after, tombstones, 200)
				if err != nil {
					return err
				}
				for _, r := range refs {
					if err := f.republishRef(ctx, r); err != nil {
						return err
					}
					n++
				}
				if len(refs) < 200 {
					break
				}
				after = next
			}
		}
		f.logger.Info("re-published this pod's copies to the shared store", "records", n)
	}
	return f.local.setMeta(metaEpoch, epoch)
}

// republishRef re-publishes one local record; only unavailability is an
// error (the walk stops and the next Sync starts it again).
func (f *Fallback) republishRef(ctx context.Context, r localRef) error {
	var err error
	if r.deleted {
		_, err = f.shared.deleteResponse(ctx, r.tenant, r.id, true)
	} else {
		var cp *Checkpoint
		if cp, err = f.local.GetResponse(ctx, r.tenant, r.id); err == nil {
			err = f.republish(ctx, cp)
		}
	}
	if errors.Is(err, ErrUnavailable) || ctx.Err() != nil {
		return err
	}
	if err != nil && !errors.Is(err, ErrNotFound) {
		f.logger.Warn("re-publish a local record", "response_id", r.id, "err", err)
	}
	return nil
}

// CheckpointStats returns the Fallback's counters, with the shared and
// local stores' Corrupt and Diverted added in.
func (f *Fallback) CheckpointStats() CheckpointStats {
	s := f.counters.stats()
	sh, lo := f.shared.CheckpointStats(), f.local.CheckpointStats()
	s.Corrupt += sh.Corrupt + lo.Corrupt
	s.Diverted += sh.Diverted + lo.Diverted
	s.Queued = uint64(max(f.queued.Load(), 0))
	s.Unproven = f.unproven.Load()
	return s
}
