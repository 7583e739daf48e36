package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisArtifactsOptions configures RedisArtifacts. The zero value is ready to
// use.
type RedisArtifactsOptions struct {
	// Prefix starts every key. Empty means "stitch".
	Prefix string
}

// RedisArtifacts is the portable (L2) artifact tier: sealed artifact bytes
// under prefix:{tenant}:art:<id> with a TTL, shared by every pod. It is safe
// for concurrent use.
type RedisArtifacts struct {
	c      redis.UniversalClient
	prefix string
}

// NewRedisArtifacts returns an L2 tier using c, which the caller owns. It
// panics if c is nil.
func NewRedisArtifacts(c redis.UniversalClient, opts RedisArtifactsOptions) *RedisArtifacts {
	if c == nil {
		panic("store: NewRedisArtifacts with nil client")
	}
	if opts.Prefix == "" {
		opts.Prefix = "stitch"
	}
	return &RedisArtifacts{c: c, prefix: opts.Prefix}
}

// Get returns the sealed bytes for tenant and id, ErrNotFound, or an error
// wrapping ErrUnavailable (or ctx.Err()) when Redis cannot answer in time.
func (r *RedisArtifacts) Get(ctx context.Context, tenant, id string) ([]byte, error) {
	op := func() string { return fmt.Sprintf("L2 get artifact %q", truncate(id)) } // for errors only
	if checkKey(tenant, id) != nil {
		return nil, fmt.Errorf("%s: %w", op(), ErrNotFound)
	}
	b, err := r.c.Get(ctx, redisKey(r.prefix, tenant, "art", id)).Bytes()
	if err != nil {
		return nil, redisErr(ctx, op(), err)
	}
	return b, nil
}

// Set stores sealed under tenant and id for ttl (which must be positive).
func (r *RedisArtifacts) Set(ctx context.Context, tenant, id string, sealed []byte, ttl time.Duration) error {
	op := func() string { return fmt.Sprintf("L2 set artifact %q", truncate(id)) } // for errors only
	if err := checkArtifactPut(tenant, id, ttl); err != nil {
		return fmt.Errorf("%s: %w", op(), err)
	}
	if err := r.c.Set(ctx, redisKey(r.prefix, tenant, "art", id), sealed, ttl).Err(); err != nil {
		return redisErr(ctx, op(), err)
	}
	return nil
}

// SetMany stores tenant's entries in one pipelined round trip (PortableBatch). Each entry is
// checked as Set checks it; the first failure is returned, the others still written.
func (r *RedisArtifacts) SetMany(ctx context.Context, tenant string, entries []PortableEntry) error {
	const op = "L2 set artifacts"
	for _, e := range entries {
		if err := checkArtifactPut(tenant, e.ID, e.TTL); err != nil {
			return fmt.Errorf("%s: %q: %w", op, truncate(e.ID), err)
		}
	}
	_, err := r.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			p.Set(ctx, redisKey(r.prefix, tenant, "art", e.ID), e.Sealed, e.TTL)
		}
		return nil
	})
	return redisErr(ctx, op, err)
}

// checkArtifactPut checks what Set and SetMany write: a valid key, and a positive ttl (Redis takes none
// as "keep forever").
func checkArtifactPut(tenant, id string, ttl time.Duration) error {
	if err := checkKey(tenant, id); err != nil {
		return err
	}
	if ttl <= 0 {
		return fmt.Errorf("non-positive ttl %v", ttl)
	}
	return nil
}

// Delete removes the entry for tenant and id; absent is not an error.
func (r *RedisArtifacts) Delete(ctx context.Context, tenant, id string) error {
	if checkKey(tenant, id) != nil {
		return nil
	}
	return redisErr(ctx, fmt.Sprintf("L2 delete artifact %q", truncate(id)),
		r.c.Del(ctx, redisKey(r.prefix, tenant, "art", id)).Err())
}
