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
}

// Tiered is the artifact store: L1 in front of L2, both holding the same
// sealed bytes. Get reads through (an L2 hit fills L1); Put writes through.
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

	l2Hits, l2Misses, l2Errors, l2SetErrors, invalid, expired atomic.Uint64
}

// TieredStats is a snapshot of Tiered counters for metrics. Counters only
// grow. L1 is the zero value when there is no L1.
type TieredStats struct {
	L1                                      L1Stats
	L2Hits, L2Misses, L2Errors, L2SetErrors uint64
	Invalid, Expired                        uint64
}

// NewTiered returns a Tiered store. It panics if opts.Sealer is nil.
func NewTiered(opts TieredOptions) *Tiered {
	if opts.Sealer == nil {
		panic("store: NewTiered without a Sealer")
	}
	t := &Tiered{sealer: opts.Sealer, l1: opts.L1, l2: opts.L2, ttl: opts.TTL,
		l2Timeout: opts.L2Timeout, now: opts.Now, logger: opts.Logger}
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
// from. Errors wrap ErrNotFound (miss), ErrExpired, ErrInvalid (tampered,
// another tenant's, or not for this response id), ErrUnavailable (L2 down or
// slow, and no L1 copy) or the ctx error. Every error means "do a full
// render"; none needs a retry. The caller still compares Fingerprint.
func (t *Tiered) Get(ctx context.Context, tenant, id string) (*Artifact, Tier, error) {
	if t.l1 != nil {
		if b, ok := t.l1.Get(tenant, id); ok {
			a, err := t.open(tenant, id, b)
			if err != nil {
				t.l1.Delete(tenant, id) // it will not get better
				return nil, TierNone, err
			}
			return a, TierLocal, nil
		}
	}
	if t.l2 == nil {
		return nil, TierNone, fmt.Errorf("get artifact %q: %w", truncate(id), ErrNotFound)
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
	a, err := t.open(tenant, id, b)
	if err != nil {
		return nil, TierNone, err
	}
	if t.l1 != nil {
		_ = t.l1.Set(tenant, id, b) // counted in L1 stats; a cache fill may fail
	}
	return a, TierPortable, nil
}

func (t *Tiered) open(tenant, id string, b []byte) (*Artifact, error) {
	a, err := t.sealer.OpenArtifact(tenant, b)
	if err == nil && a.ResponseID != id {
		err = fmt.Errorf("artifact stored under %q is for %q: %w", truncate(id), truncate(a.ResponseID), ErrInvalid)
	}
	switch {
	case errors.Is(err, ErrExpired):
		t.expired.Add(1)
	case err != nil:
		t.invalid.Add(1)
	}
	if err != nil {
		return nil, fmt.Errorf("get artifact %q: %w", truncate(id), err)
	}
	return a, nil
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

// Put seals a (setting ExpiresAt to now+TTL when zero, without mutating a)
// and writes it to L1 then L2. The L1 write happens even when L2 fails. An L1
// failure (such as an artifact over L1's entry limit) is only counted in
// Stats, unless there is no L2 and the artifact was therefore stored nowhere;
// an L2 failure is returned (ErrUnavailable for Redis down or slow). Put does
// not retain a.
func (t *Tiered) Put(ctx context.Context, a *Artifact) error {
	if a.ExpiresAt.IsZero() {
		cp := *a
		cp.ExpiresAt = t.now().Add(t.ttl)
		a = &cp
	}
	sealed, err := t.sealer.SealArtifact(a)
	if err != nil {
		return fmt.Errorf("put artifact: %w", err)
	}
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
	err = t.l2.Set(l2ctx, a.Tenant, a.ResponseID, sealed, ttl)
	cancel()
	if err != nil {
		t.l2SetErrors.Add(1)
		return fmt.Errorf("put artifact: %w", t.l2Err(ctx, err))
	}
	return nil
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

// Stats returns current counters.
func (t *Tiered) Stats() TieredStats {
	s := TieredStats{
		L2Hits: t.l2Hits.Load(), L2Misses: t.l2Misses.Load(), L2Errors: t.l2Errors.Load(),
		L2SetErrors: t.l2SetErrors.Load(), Invalid: t.invalid.Load(), Expired: t.expired.Load(),
	}
	if t.l1 != nil {
		s.L1 = t.l1.Stats()
	}
	return s
}
