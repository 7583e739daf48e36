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
	links, tier, err := t.links(ctx, tenant, id)
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
// snapshot. Links read from L2 fill L1 once they verified.
func (t *Tiered) links(ctx context.Context, tenant, id string) ([]*link, Tier, error) {
	tier := TierLocal
	var links []*link
	for cur := id; ; {
		if len(links) == maxWalk {
			return nil, TierNone, fmt.Errorf("chain longer than %d links: %w", maxWalk, ErrNotFound)
		}
		b, from, err := t.fetch(ctx, tenant, cur)
		if err == nil {
			var l *link
			if l, err = t.open(tenant, cur, b, from); err == nil {
				if from == TierPortable {
					tier = TierPortable
				}
				links = append(links, l)
				if l.base == "" {
					return links, tier, nil
				}
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
func (t *Tiered) open(tenant, id string, b []byte, from Tier) (*link, error) {
	l, err := t.sealer.openLink(tenant, b)
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
		t.rebase(ctx, a, parent.ResponseID)
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
	ttl := a.ExpiresAt.Sub(t.now()).Round(time.Second)
	if ttl < time.Second {
		ttl = time.Second
	}
	l2ctx, cancel := context.WithTimeout(ctx, t.l2Timeout)
	err := t.l2.Set(l2ctx, a.Tenant, a.ResponseID, sealed, ttl)
	cancel()
	if err != nil {
		t.l2SetErrors.Add(1)
		return fmt.Errorf("put artifact: %w", t.l2Err(ctx, err))
	}
	return nil
}

// rebase rewrites the links of id's chain as what each adds to snap, a full
// snapshot just written: their content is unchanged (so a reader holding an
// older copy of any of them still reassembles the same ids), their bytes
// shrink to what they do not share with snap, and the chain's old snapshot
// stops holding a second full history. Links sharing less than half their ids
// with snap are left as they are. Failures only leave the old links (they age
// out); they are logged.
func (t *Tiered) rebase(ctx context.Context, snap *Artifact, id string) {
	links, _, err := t.links(ctx, snap.Tenant, id)
	if err != nil {
		t.logger.Debug("artifact chain not re-based", "response_id", id, "error", err)
		return
	}
	_, _, err = walkUp(links, func(l *link, ids []uint32, bounds []Boundary) error {
		cur := *l.a
		cur.PromptIDs, cur.GeneratedIDs, cur.Boundaries = ids[:l.promptLen:l.promptLen], ids[l.promptLen:], bounds
		nl := linkOn(&cur, snap)
		if nl == nil {
			return nil
		}
		if snap.ExpiresAt.Before(cur.ExpiresAt) {
			cur.ExpiresAt = snap.ExpiresAt
		}
		sealed, err := t.sealer.sealLink(&cur, nl)
		if err == nil {
			t.rebased.Add(1)
			err = t.write(ctx, &cur, sealed)
		}
		if err != nil {
			t.logger.Warn("artifact link not re-based", "response_id", cur.ResponseID, "error", err)
		}
		return nil
	})
	if err != nil {
		t.logger.Warn("artifact chain not re-based", "response_id", id, "error", err)
	}
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
