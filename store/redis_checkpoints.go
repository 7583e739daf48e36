package store

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCheckpointsOptions configures RedisCheckpoints. The zero value is
// ready to use.
type RedisCheckpointsOptions struct {
	// Prefix starts every key. Empty means "stitch". Change it to share one
	// Redis between deployments.
	Prefix string
	// TTL is how long a checkpoint and the items of its conversation are kept
	// after the last response that references them was stored. Zero means 30
	// days.
	TTL time.Duration
}

// RedisCheckpoints stores checkpoints in Redis for multi-pod deployments.
//
// Keys: prefix:{tenant}:resp:<id> holds the checkpoint record and
// prefix:{tenant}:item:<id> each item, all with TTL. PutResponse writes the
// new items and the record and refreshes the TTL of every earlier item of the
// conversation in one MULTI/EXEC, so a conversation stays readable as long as
// its latest response. RedisCheckpoints is safe for concurrent use.
type RedisCheckpoints struct {
	c      redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// NewRedisCheckpoints returns a store using c, which the caller owns. It
// panics if c is nil.
func NewRedisCheckpoints(c redis.UniversalClient, opts RedisCheckpointsOptions) *RedisCheckpoints {
	if c == nil {
		panic("store: NewRedisCheckpoints with nil client")
	}
	if opts.Prefix == "" {
		opts.Prefix = "stitch"
	}
	if opts.TTL <= 0 {
		opts.TTL = 30 * 24 * time.Hour
	}
	return &RedisCheckpoints{c: c, prefix: opts.Prefix, ttl: opts.TTL}
}

// PutResponse stores items and cp atomically (MULTI/EXEC) with the TTL, and
// extends the TTL of cp.ConversationItemIDs not among items.
func (s *RedisCheckpoints) PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error {
	if err := checkPut(cp, items); err != nil {
		return err
	}
	rec, err := encodeCheckpoint(cp)
	if err != nil {
		return err
	}
	written := make(map[string]bool, len(items))
	_, err = s.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, it := range items {
			written[it.ID] = true
			p.Set(ctx, redisKey(s.prefix, cp.Tenant, "item", it.ID), []byte(it.Data), s.ttl)
		}
		for _, id := range cp.ConversationItemIDs {
			if !written[id] && validID(id) {
				written[id] = true
				p.Expire(ctx, redisKey(s.prefix, cp.Tenant, "item", id), s.ttl)
			}
		}
		p.Set(ctx, redisKey(s.prefix, cp.Tenant, "resp", cp.ID), rec, s.ttl)
		return nil
	})
	return redisErr(ctx, fmt.Sprintf("put response %q", cp.ID), err)
}

// GetResponse returns the checkpoint for tenant and id, or ErrNotFound (also
// for another tenant's id or an expired one).
func (s *RedisCheckpoints) GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	op := fmt.Sprintf("get response %q", truncate(id))
	if checkKey(tenant, id) != nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	b, err := s.c.Get(ctx, redisKey(s.prefix, tenant, "resp", id)).Bytes()
	if err != nil {
		return nil, redisErr(ctx, op, err)
	}
	cp, err := decodeCheckpoint(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", op, err)
	}
	return cp, nil
}

// GetItems returns the items in the order of ids (one MGET); a missing id
// fails the call with ErrNotFound naming it.
func (s *RedisCheckpoints) GetItems(ctx context.Context, tenant string, ids []string) ([]Item, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		if !validTenant(tenant) || !validID(id) {
			return nil, fmt.Errorf("get item %q: %w", truncate(id), ErrNotFound)
		}
		keys[i] = redisKey(s.prefix, tenant, "item", id)
	}
	vals, err := s.c.MGet(ctx, keys...).Result()
	if err != nil {
		return nil, redisErr(ctx, "get items", err)
	}
	items := make([]Item, len(ids))
	for i, v := range vals {
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("get item %q: %w", truncate(ids[i]), ErrNotFound)
		}
		items[i] = Item{ID: ids[i], Data: []byte(str)}
	}
	return items, nil
}

// DeleteResponse removes the checkpoint record; items expire with their TTL.
func (s *RedisCheckpoints) DeleteResponse(ctx context.Context, tenant, id string) error {
	op := fmt.Sprintf("delete response %q", truncate(id))
	if checkKey(tenant, id) != nil {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	n, err := s.c.Del(ctx, redisKey(s.prefix, tenant, "resp", id)).Result()
	if err != nil {
		return redisErr(ctx, op, err)
	}
	if n == 0 {
		return fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	return nil
}
