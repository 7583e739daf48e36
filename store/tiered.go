package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"
)

// PortableCache is the L2 tier as Tiered uses it: sealed bytes by tenant and
// id with a TTL. *RedisArtifacts implements it. Get returns ErrNotFound for a
// miss and ErrUnavailable (wrapped) when the backend cannot answer.
type PortableCache interface {
	Get(ctx context.Context, tenant, id string) ([]byte, error)
	Set(ctx context.Context, tenant, id string, sealed []byte, ttl time.Duration) error
	Delete(ctx context.Context, tenant, id string) error
}

var _ PortableCache = (*RedisArtifacts)(nil)

// PortableBatch is the optional capability of a PortableCache to store several
// of a tenant's entries in one round trip: a snapshot's re-basing rewrites up
// to MaxChain+1 links at once. *RedisArtifacts implements it with a pipeline.
// SetMany returns the first failure; entries may be written or not.
type PortableBatch interface {
	SetMany(ctx context.Context, tenant string, entries []PortableEntry) error
}

var _ PortableBatch = (*RedisArtifacts)(nil)

// PortableEntry is one entry of PortableBatch.SetMany.
type PortableEntry struct {
	ID     string
	Sealed []byte
	TTL    time.Duration
}

// Tier names where an artifact was found, for the hit_local / hit_portable
// outcomes.
type Tier string

const (
	// TierNone is returned with errors.
	TierNone Tier = ""
	// TierLocal is the in-process L1 cache.
	TierLocal Tier = "local"
	// TierPortable is the shared L2 cache (Redis).
	TierPortable Tier = "portable"
)

// TieredOptions configures a Tiered artifact store.
type TieredOptions struct {
	// Sealer seals and opens artifacts. Required.
	Sealer *Sealer
	// L1 is the local tier. Nil disables it.
	L1 *L1
	// L2 is the portable tier. Nil disables it (single-pod deployments).
	L2 PortableCache
	// TTL is the lifetime given to artifacts put with a zero ExpiresAt. Zero
	// means 24 hours.
	TTL time.Duration
	// L2Timeout bounds each L2 call on top of the caller's ctx, so a slow
	// Redis costs at most this much before the caller falls back to a full
	// render. Zero means 500ms.
	L2Timeout time.Duration
	// Now is the clock for default expiries and TTLs. Nil means time.Now. It
	// should match the Sealer's clock.
	Now func() time.Time
	// Logger receives L2 failures at Warn (without tenant data). Nil discards.
	Logger *slog.Logger
	// MaxChain is the most links an artifact stored by PutChild may have
	// below it; the turn after is stored as a full snapshot and the chain
	// re-based on it. Zero means 8; negative stores every artifact in full
	// (one full history per turn, as before chains).
	MaxChain int
}

// Tiered is the artifact store: L1 in front of L2, both holding the same
// sealed bytes. Get reads through (an L2 hit fills L1); Put and PutChild
// write through. An artifact is stored as a chain of links (chain.go).
// It is safe for concurrent use. With neither tier it is a null store: every
// Get misses and Put only validates and seals.
type Tiered struct {
	sealer    *Sealer
	l1        *L1
	l2        PortableCache
	ttl       time.Duration
	l2Timeout time.Duration
	now       func() time.Time
	logger    *slog.Logger
	maxChain  int

	l2Hits, l2Misses, l2Errors, l2SetErrors, invalid, expired, rebased atomic.Uint64
}

// TieredStats is a snapshot of Tiered counters for metrics. Counters only
// grow. L1 is the zero value when there is no L1.
type TieredStats struct {
	L1                                      L1Stats
	L2Hits, L2Misses, L2Errors, L2SetErrors uint64
	Invalid, Expired                        uint64
	// Rebased counts links rewritten onto a new snapshot.
	Rebased uint64
}

// NewTiered returns a Tiered store. It panics if opts.Sealer is nil.
func NewTiered(opts TieredOptions) *Tiered {
	if opts.Sealer == nil {
		panic("store: NewTiered without a Sealer")
	}
	t := &Tiered{sealer: opts.Sealer, l1: opts.L1, l2: opts.L2, ttl: opts.TTL,
		l2Timeout: opts.L2Timeout, now: opts.Now, logger: opts.Logger, maxChain: opts.MaxChain}
	if t.maxChain == 0 {
		t.maxChain = 8
	}
	if t.ttl <= 0 {
		t.ttl = 24 * time.Hour
	}
	if t.l2Timeout <= 0 {
		t.l2Timeout = 500 * time.Millisecond
	}
	if t.now == nil {
		t.now = time.Now
	}
	if t.logger == nil {
		t.logger = slog.New(slog.DiscardHandler)
	}
	return t
}

// Get returns the artifact of response id for tenant and the tier it came
// from (TierPortable when any link of its chain came from L2). Errors wrap
// ErrNotFound (miss, or a link of its chain missing), ErrExpired, ErrInvalid
// (tampered, another tenant's, not for this response id, or a link that does
// not match its base), ErrUnavailable (L2 down or slow, and no L1 copy) or the
// ctx error. Every error means "do a full render"; none needs a retry. The
// caller still compares Fingerprint.
func (t *Tiered) Get(ctx context.Context, tenant, id string) (*Artifact, Tier, error) {
	links, tier, err := t.links(ctx, tenant, id, nil)
	if err != nil {
		return nil, TierNone, fmt.Errorf("get artifact %q: %w", truncate(id), err)
	}
	a, err := reconstruct(links)
	if err != nil {
		t.invalid.Add(1)
		return nil, TierNone, fmt.Errorf("get artifact %q: %w", truncate(id), err)
	}
	return a, tier, nil
}

// links reads the chain of id: its link, its base's, … down to a full
// snapshot. Links read from L2 fill L1 once they verified. parent, when not
// nil, is id's artifact in memory (PutChild's re-basing): the snapshot's first
// ids that every link above it kept are parent's first ids, taken instead of
// decoded, and links found in L1 are not MAC-checked again: L1 is this
// process's memory, holding only what it sealed itself or verified on the way
// in from L2, which no other process can write (Get checks every MAC).
func (t *Tiered) links(ctx context.Context, tenant, id string, parent *Artifact) ([]*link, Tier, error) {
	tier := TierLocal
	var links []*link
	shared := 0 // parent's first ids that every link read so far kept
	if parent != nil && parent.Tenant == tenant && parent.ResponseID == id {
		shared = len(parent.PromptIDs) + len(parent.GeneratedIDs)
	}
	for cur := id; ; {
		if len(links) == maxWalk {
			return nil, TierNone, fmt.Errorf("chain longer than %d links: %w", maxWalk, ErrNotFound)
		}
		b, from, err := t.fetch(ctx, tenant, cur)
		if err == nil {
			var l *link
			if l, err = t.open(tenant, cur, b, from, prefixOf(parent, shared), parent == nil || from != TierLocal); err == nil {
				if from == TierPortable {
					tier = TierPortable
				}
				links = append(links, l)
				if l.base == "" {
					return links, tier, nil
				}
				shared = min(shared, l.reuseIDs)
				for _, seen := range links {
					if seen.a.ResponseID == l.base {
						return nil, TierNone, fmt.Errorf("link %q: chain loops back to %q: %w", truncate(cur), truncate(l.base), ErrInvalid)
					}
				}
				cur = l.base
				continue
			}
		}
		if len(links) > 0 {
			err = fmt.Errorf("link %q: %w", truncate(cur), err)
		}
		return nil, TierNone, err
	}
}

// fetch returns the sealed bytes of one link and the tier holding them.
func (t *Tiered) fetch(ctx context.Context, tenant, id string) ([]byte, Tier, error) {
	if t.l1 != nil {
		if b, ok := t.l1.Get(tenant, id); ok {
			return b, TierLocal, nil
		}
	}
	if t.l2 == nil {
		return nil, TierNone, ErrNotFound
	}
	l2ctx, cancel := context.WithTimeout(ctx, t.l2Timeout)
	b, err := t.l2.Get(l2ctx, tenant, id)
	cancel()
	if err != nil {
		err = t.l2Err(ctx, err)
		if errors.Is(err, ErrNotFound) {
			t.l2Misses.Add(1)
		} else {
			t.l2Errors.Add(1)
			t.logger.Warn("artifact L2 get failed", "response_id", id, "error", err)
		}
		return nil, TierNone, err
	}
	t.l2Hits.Add(1)
	return b, TierPortable, nil
}

// open verifies one link read from tier from. A bad L1 copy is dropped (it
// will not get better); a good L2 copy fills L1.
func (t *Tiered) open(tenant, id string, b []byte, from Tier, known idParts, checkMAC bool) (*link, error) {
	l, err := t.sealer.openLink(tenant, b, known, checkMAC)
	if err == nil && l.a.ResponseID != id {
		err = fmt.Errorf("artifact stored under %q is for %q: %w", truncate(id), truncate(l.a.ResponseID), ErrInvalid)
	}
	switch {
	case errors.Is(err, ErrExpired):
		t.expired.Add(1)
	case err != nil:
		t.invalid.Add(1)
	}
	if err != nil {
		if from == TierLocal {
			t.l1.Delete(tenant, id)
		}
		return nil, err
	}
	if from == TierPortable && t.l1 != nil {
		_ = t.l1.Set(tenant, id, b) // counted in L1 stats; a cache fill may fail
	}
	return l, nil
}

// l2Err turns the per-call L2 timeout into ErrUnavailable: from the caller's
// point of view a Redis that does not answer in time is unavailable, unlike
// the caller's own ctx ending, which is passed through.
func (t *Tiered) l2Err(ctx context.Context, err error) error {
	if ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrUnavailable) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// Put stores a as a full snapshot: PutChild without a parent, except that a is
// not modified (a zero ExpiresAt is defaulted on a copy).
func (t *Tiered) Put(ctx context.Context, a *Artifact) error {
	cp := *a
	return t.PutChild(ctx, &cp, nil)
}

// PutChild seals a and writes it to L1 then L2, as what it adds to parent (the
// artifact the turn extended, as Get or an earlier PutChild left it; nil for
// none) when that is worth it, else as a full snapshot. A snapshot that ends a
// chain (parent's chain has MaxChain links, or would expire before half of
// a's lifetime) re-bases the links of parent's chain on a. On success a's
// ExpiresAt is the stored artifact's (a zero one defaulted to now+TTL, a link
// never outliving its base) and its Chain the links below it, so that a can be
// the parent of the next turn. The L1 write happens even when L2 fails. An L1
// failure (such as an artifact over L1's entry limit) is only counted in
// Stats, unless there is no L2 and the artifact was therefore stored nowhere;
// an L2 failure is returned (ErrUnavailable for Redis down or slow). PutChild
// does not retain a or parent. A parent of another tenant is never used.
func (t *Tiered) PutChild(ctx context.Context, a, parent *Artifact) error {
	now := t.now()
	if a.ExpiresAt.IsZero() {
		a.ExpiresAt = now.Add(t.ttl)
	}
	a.Chain = nil
	l, rebase := linkOf(a), false
	if parent != nil && parent.Tenant == a.Tenant && parent.ResponseID != a.ResponseID && t.maxChain > 0 {
		if pl := linkOn(a, parent); pl != nil {
			if len(parent.Chain) < t.maxChain && 2*parent.ExpiresAt.Sub(now) >= a.ExpiresAt.Sub(now) {
				l = pl
				a.Chain = chainOf(parent)
				if parent.ExpiresAt.Before(a.ExpiresAt) {
					a.ExpiresAt = parent.ExpiresAt
				}
			} else {
				rebase = true
			}
		}
	}
	sealed, err := t.sealer.sealLink(a, l)
	if err != nil {
		return fmt.Errorf("put artifact: %w", err)
	}
	if err := t.write(ctx, a, sealed); err != nil {
		a.Chain = nil
		return err
	}
	if rebase {
		t.rebase(ctx, a, parent)
	}
	return nil
}

// write stores one sealed link of a in both tiers.
func (t *Tiered) write(ctx context.Context, a *Artifact, sealed []byte) error {
	var l1Err error
	if t.l1 != nil {
		l1Err = t.l1.Set(a.Tenant, a.ResponseID, sealed)
	}
	if t.l2 == nil {
		if l1Err != nil {
			return fmt.Errorf("put artifact: %w", l1Err)
		}
		return nil
	}
	l2ctx, cancel := context.WithTimeout(ctx, t.l2Timeout)
	err := t.l2.Set(l2ctx, a.Tenant, a.ResponseID, sealed, t.l2TTL(a))
	cancel()
	if err != nil {
		t.l2SetErrors.Add(1)
		return fmt.Errorf("put artifact: %w", t.l2Err(ctx, err))
	}
	return nil
}

// l2TTL is the L2 lifetime of a's entry: until a expires, at least a second.
func (t *Tiered) l2TTL(a *Artifact) time.Duration {
	return max(a.ExpiresAt.Sub(t.now()).Round(time.Second), time.Second)
}

// writeMany stores sealed links of one tenant in both tiers, in one L2 round
// trip when L2 is a PortableBatch. Failures are logged: a re-based link not
// written leaves the old one, which reads the same.
func (t *Tiered) writeMany(ctx context.Context, tenant string, entries []PortableEntry) {
	if t.l1 != nil {
		for _, e := range entries {
			_ = t.l1.Set(tenant, e.ID, e.Sealed) // counted in L1 stats; L2 holds the link
		}
	}
	if t.l2 == nil || len(entries) == 0 {
		return
	}
	l2ctx, cancel := context.WithTimeout(ctx, t.l2Timeout)
	defer cancel()
	if batch, ok := t.l2.(PortableBatch); ok {
		if err := batch.SetMany(l2ctx, tenant, entries); err != nil {
			t.l2SetErrors.Add(1)
			t.logger.Warn("artifact links not re-based", "links", len(entries), "error", t.l2Err(ctx, err))
		}
		return
	}
	for _, e := range entries {
		if err := t.l2.Set(l2ctx, tenant, e.ID, e.Sealed, e.TTL); err != nil {
			t.l2SetErrors.Add(1)
			t.logger.Warn("artifact link not re-based", "response_id", e.ID, "error", t.l2Err(ctx, err))
		}
	}
}

// rebase rewrites the links of parent's chain as what each adds to snap, a
// full snapshot just written: their content is unchanged (so a reader holding
// an older copy of any of them still reassembles the same ids), their bytes
// shrink to what they do not share with snap, and the chain's old snapshot
// stops holding a second full history. Links sharing less than half their ids
// with snap are left as they are. Failures only leave the old links (they age
// out); they are logged.
//
// It costs about the ids the chain's links added, not the history: the old
// snapshot's ids that the links above it kept are taken from parent, in
// memory (links), and each link's prefix shared with snap is carried up the
// chain (sharedIDs) instead of compared from the start.
func (t *Tiered) rebase(ctx context.Context, snap, parent *Artifact) {
	links, _, err := t.links(ctx, snap.Tenant, parent.ResponseID, parent)
	if err != nil {
		t.logger.Debug("artifact chain not re-based", "response_id", parent.ResponseID, "error", err)
		return
	}
	var shared sharedIDs
	var entries []PortableEntry
	ids, _, err := walkUp(links, func(l *link, ids []uint32, bounds []Boundary) error {
		cur := *l.a
		cur.PromptIDs, cur.GeneratedIDs, cur.Boundaries = ids[:l.promptLen:l.promptLen], ids[l.promptLen:], bounds
		nl := shared.linkOn(&cur, l, snap)
		if nl == nil {
			return nil
		}
		if snap.ExpiresAt.Before(cur.ExpiresAt) {
			cur.ExpiresAt = snap.ExpiresAt
		}
		sealed, err := t.sealer.sealLink(&cur, nl)
		if err != nil {
			t.logger.Warn("artifact link not re-based", "response_id", cur.ResponseID, "error", err)
			return nil
		}
		entries = append(entries, PortableEntry{ID: cur.ResponseID, Sealed: sealed, TTL: t.l2TTL(&cur)})
		return nil
	})
	if err == nil && commonIDs(ids, nil, parent.PromptIDs, parent.GeneratedIDs) != len(parent.PromptIDs)+len(parent.GeneratedIDs) {
		// Unreachable while a response id names one content (PutChild's linkOn relies on it
		// too); checked since a chain reassembled wrong would be stored.
		err = fmt.Errorf("the chain does not reassemble the parent's ids: %w", ErrInvalid)
	}
	if err != nil {
		t.logger.Warn("artifact chain not re-based", "response_id", parent.ResponseID, "error", err)
		return
	}
	t.rebased.Add(uint64(len(entries)))
	t.writeMany(ctx, snap.Tenant, entries)
}

// prefixOf is a's first n ids (none for a nil a).
func prefixOf(a *Artifact, n int) idParts {
	switch {
	case a == nil || n <= 0:
		return idParts{}
	case n <= len(a.PromptIDs):
		return idParts{a: a.PromptIDs[:n]}
	}
	return idParts{a: a.PromptIDs, b: a.GeneratedIDs[:min(n-len(a.PromptIDs), len(a.GeneratedIDs))]}
}

// Delete removes the artifact from both tiers (absent is not an error).
func (t *Tiered) Delete(ctx context.Context, tenant, id string) error {
	if t.l1 != nil {
		t.l1.Delete(tenant, id)
	}
	if t.l2 == nil {
		return nil
	}
	l2ctx, cancel := context.WithTimeout(ctx, t.l2Timeout)
	defer cancel()
	if err := t.l2.Delete(l2ctx, tenant, id); err != nil {
		return fmt.Errorf("delete artifact %q: %w", truncate(id), t.l2Err(ctx, err))
	}
	return nil
}

// EvictLocal drops the artifact's link from L1 only, as an L1 eviction would: the next Get reads
// it from L2 (and fills L1 again). For a benchmark of the cold path; absent is not an error.
func (t *Tiered) EvictLocal(tenant, id string) {
	if t.l1 != nil {
		t.l1.Delete(tenant, id)
	}
}

// Stats returns current counters.
func (t *Tiered) Stats() TieredStats {
	s := TieredStats{
		L2Hits: t.l2Hits.Load(), L2Misses: t.l2Misses.Load(), L2Errors: t.l2Errors.Load(),
		L2SetErrors: t.l2SetErrors.Load(), Invalid: t.invalid.Load(), Expired: t.expired.Load(),
		Rebased: t.rebased.Load(),
	}
	if t.l1 != nil {
		s.L1 = t.l1.Stats()
	}
	return s
}

// Footprint returns the sealed bytes L1 and L2 hold now under tenant for the
// response ids (absent ones count zero): what one conversation's artifacts
// occupy, for sizing and the bench. It reads every entry; it is not for the
// request path.
func (t *Tiered) Footprint(ctx context.Context, tenant string, ids []string) (l1, l2 int64, err error) {
	for _, id := range ids {
		if t.l1 != nil {
			if b, ok := t.l1.Get(tenant, id); ok {
				l1 += int64(len(b))
			}
		}
		if t.l2 == nil {
			continue
		}
		b, gerr := t.l2.Get(ctx, tenant, id)
		switch {
		case gerr == nil:
			l2 += int64(len(b))
		case !errors.Is(gerr, ErrNotFound):
			return l1, l2, fmt.Errorf("artifact footprint: %w", gerr)
		}
	}
	return l1, l2, nil
}

// FullBytes returns the sealed size of response id's artifact stored as one
// full snapshot: what every turn cost each tier before chains, and the
// reference the per-conversation footprint is compared with.
func (t *Tiered) FullBytes(ctx context.Context, tenant, id string) (int, error) {
	a, _, err := t.Get(ctx, tenant, id)
	if err != nil {
		return 0, err
	}
	b, err := t.sealer.SealArtifact(a)
	if err != nil {
		return 0, fmt.Errorf("artifact full size: %w", err)
	}
	return len(b), nil
}
