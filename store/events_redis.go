package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// redisRecords is the RecordBackend in Redis, shared by every pod.
type redisRecords struct {
	c      redis.UniversalClient
	prefix string
}

// RedisRecords returns a RecordBackend in Redis under prefix (empty: "stitch"). Keys are
// prefix:{tenant}:kind:id; an update is a WATCH/MULTI transaction on the tenant's slot.
func RedisRecords(c redis.UniversalClient, prefix string) RecordBackend {
	if c == nil {
		panic("store: RedisRecords with nil client")
	}
	if prefix == "" {
		prefix = "stitch"
	}
	return &redisRecords{c: c, prefix: prefix}
}

func (r *redisRecords) key(tenant, kind, id string) string {
	return redisKey(r.prefix, tenant, kind, id)
}

func (r *redisRecords) get(ctx context.Context, key string) ([]byte, error) {
	b, err := r.c.Get(ctx, key).Bytes()
	if err != nil {
		return nil, redisErr(ctx, "get record", err)
	}
	return b, nil
}

func (r *redisRecords) mget(ctx context.Context, keys []string) ([][]byte, error) {
	out := make([][]byte, len(keys))
	if len(keys) == 0 {
		return out, nil
	}
	// One slot per tenant: the keys of one call share it, so MGET works in a cluster.
	const page = 500
	for start := 0; start < len(keys); start += page {
		end := min(len(keys), start+page)
		vals, err := r.c.MGet(ctx, keys[start:end]...).Result()
		if err != nil {
			return nil, redisErr(ctx, "get records", err)
		}
		for i, v := range vals {
			if s, ok := v.(string); ok {
				out[start+i] = []byte(s)
			}
		}
	}
	return out, nil
}

func (r *redisRecords) update(ctx context.Context, key string, fn func(cur []byte) (*recordWrites, error)) error {
	for range maxUpdateRetries {
		var fnErr error
		err := r.c.Watch(ctx, func(tx *redis.Tx) error {
			cur, err := tx.Get(ctx, key).Bytes()
			if err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			w, err := fn(cur)
			if err != nil {
				fnErr = err
				return nil
			}
			if w == nil {
				return nil
			}
			_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				for _, k := range w.dels {
					p.Del(ctx, k)
				}
				for _, pt := range w.puts {
					p.Set(ctx, pt.key, pt.val, w.ttl)
				}
				for _, pt := range w.touchPuts {
					p.Set(ctx, pt.key, pt.val, w.touchTTLOrDefault())
				}
				for _, k := range w.touch {
					p.PExpire(ctx, k, w.touchTTLOrDefault())
				}
				if w.logKey != "" && len(w.log) > 0 {
					args := make([]any, len(w.log))
					for i, e := range w.log {
						args[i] = e
					}
					p.RPush(ctx, w.logKey, args...)
					p.PExpire(ctx, w.logKey, w.ttl)
				}
				return nil
			})
			return err
		}, key)
		if errors.Is(err, redis.TxFailedErr) {
			continue // key changed between WATCH and EXEC: read it again
		}
		if err != nil {
			return redisErr(ctx, "update record", err)
		}
		return fnErr
	}
	return fmt.Errorf("update record: %w: %w", ErrUnavailable, errUpdateContended)
}

func (r *redisRecords) logRange(ctx context.Context, key string, from, max int) ([][]byte, error) {
	if from < 0 || max <= 0 {
		return nil, nil
	}
	vals, err := r.c.LRange(ctx, key, int64(from), int64(from+max-1)).Result()
	if err != nil {
		return nil, redisErr(ctx, "read log", err)
	}
	out := make([][]byte, len(vals))
	for i, v := range vals {
		out[i] = []byte(v)
	}
	return out, nil
}
