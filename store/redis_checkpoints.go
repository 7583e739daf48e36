package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisCheckpointsOptions configures RedisCheckpoints. The zero value is
// ready to use, but production deployments set Sealer.
type RedisCheckpointsOptions struct {
	// Prefix starts every key. Empty means "stitch". Change it to share one
	// Redis between deployments.
	Prefix string
	// TTL is how long a checkpoint and the items of its conversation are kept
	// after the last response that references them was stored, and how long
	// a tombstone is kept after a delete. Zero means 30 days.
	TTL time.Duration
	// Sealer seals every checkpoint record and item written to Redis (MAC
	// bound to the tenant, and for items to their id; records also expire
	// with the TTL) and verifies them on read: a value that does not verify
	// reads as not found (counted as corrupt), never as someone else's data.
	// Every pod sharing the Redis needs the same keys (--seal-keys). Nil
	// stores plain JSON with no MAC: for tests and single-key-less dev setups.
	Sealer *Sealer
	// DeletionsMaxLen bounds the stream of deletions pods follow to drop
	// their local copies (approximate trimming). Zero means 100000.
	DeletionsMaxLen int64
	// Now is the clock for seal expiries. Nil means time.Now.
	Now func() time.Time
}

// RedisCheckpoints stores checkpoints in Redis for multi-pod deployments.
//
// Keys (all of a tenant in one cluster slot):
//   - prefix:{tenant}:resp:<id> the checkpoint record (sealed), with TTL;
//   - prefix:{tenant}:item:<id> each item (sealed), with TTL;
//   - prefix:{tenant}:tomb:<id> a deleted response's tombstone, with TTL;
//   - prefix:deletions a stream of (tenant, id) deletions, trimmed, read by
//     every pod's Fallback to drop its local copies;
//   - prefix:epoch a random value set once: when it is gone, Redis lost its
//     data, and each pod's Fallback re-publishes what it holds.
//
// PutResponse runs one Lua script: it refuses a tombstoned id, reports items
// whose id holds other bytes (which are then stored under derived ids, see
// Checkpoints), writes the new items and the record and refreshes the TTL of
// every earlier item of the conversation, atomically, so a conversation stays
// readable as long as its latest response. It is safe for concurrent use.
type RedisCheckpoints struct {
	c         redis.UniversalClient
	prefix    string
	ttl       time.Duration
	sealer    *Sealer
	deletions int64
	now       func() time.Time
	counters  checkpointCounters
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
	if opts.DeletionsMaxLen <= 0 {
		opts.DeletionsMaxLen = 100_000
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &RedisCheckpoints{c: c, prefix: opts.Prefix, ttl: opts.TTL, sealer: opts.Sealer,
		deletions: opts.DeletionsMaxLen, now: opts.Now}
}

// Seal purposes. An item's purpose includes its id, so a sealed item moved
// to another key does not verify.
const (
	checkpointPurpose = "checkpoint"
	itemPurposePrefix = "item/"
)

func (s *RedisCheckpoints) key(tenant, kind, id string) string {
	return redisKey(s.prefix, tenant, kind, id)
}

// sealRecord encodes cp for Redis, sealed until expiresAt when there is a
// Sealer.
func (s *RedisCheckpoints) sealRecord(cp *Checkpoint, expiresAt time.Time) ([]byte, error) {
	rec, err := encodeCheckpoint(cp)
	if err != nil || s.sealer == nil {
		return rec, err
	}
	return s.sealer.Seal(cp.Tenant, checkpointPurpose, rec, expiresAt)
}

// openRecord verifies and decodes a stored record for tenant and id.
func (s *RedisCheckpoints) openRecord(tenant, id string, b []byte) (*Checkpoint, error) {
	if s.sealer != nil {
		var err error
		if b, _, err = s.sealer.open(tenant, checkpointPurpose, b); err != nil {
			return nil, err
		}
	}
	cp, err := decodeCheckpoint(b)
	if err != nil {
		return nil, err
	}
	if cp.ID != id || cp.Tenant != tenant {
		return nil, fmt.Errorf("record stored under %q is for %q", truncate(id), truncate(cp.ID))
	}
	return cp, nil
}

// sealItem is deterministic (no expiry: the key's TTL, refreshed by every
// later turn, bounds its life), so the script can compare stored bytes.
func (s *RedisCheckpoints) sealItem(tenant, id string, data []byte) ([]byte, error) {
	if s.sealer == nil {
		return data, nil
	}
	return s.sealer.Seal(tenant, itemPurposePrefix+id, data, time.Time{})
}

func (s *RedisCheckpoints) openItem(tenant, id string, b []byte) ([]byte, error) {
	if s.sealer != nil {
		var err error
		if b, _, err = s.sealer.open(tenant, itemPurposePrefix+id, b); err != nil {
			return nil, err
		}
	}
	if !validItemData(b) {
		return nil, errors.New("stored bytes are not valid JSON")
	}
	return b, nil
}

// putScript: KEYS = record, tombstone, n new item keys, earlier item keys;
// ARGV = ttl ms, record, n, n item values, force flags (one '0'/'1' per new
// item: overwrite even if it holds other bytes). Returns {0} when stored,
// {1} for a tombstoned id, {2, i…} for the 1-based new items whose key holds
// other bytes (nothing written). TTLs of existing items are only ever
// extended: a re-published older response must not shorten the life of
// items a newer one refreshed.
var putScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[2]) == 1 then return {1} end
local n = tonumber(ARGV[3])
local force = ARGV[4 + n]
local diverged = {2}
for i = 1, n do
  if string.sub(force, i, i) ~= '1' then
    local cur = redis.call('GET', KEYS[2 + i])
    if cur and cur ~= ARGV[3 + i] then diverged[#diverged + 1] = i end
  end
end
if #diverged > 1 then return diverged end
local ttl = tonumber(ARGV[1])
local function extend(k)
  local left = redis.call('PTTL', k)
  if left >= 0 and left < ttl then redis.call('PEXPIRE', k, ttl) end
end
for i = 1, n do
  local k = KEYS[2 + i]
  if string.sub(force, i, i) == '1' or redis.call('EXISTS', k) == 0 then
    redis.call('SET', k, ARGV[3 + i], 'PX', ttl)
  else
    extend(k)
  end
end
for j = 3 + n, #KEYS do extend(KEYS[j]) end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ttl)
return {0}
`)

// PutResponse stores items and cp atomically with the TTL, and extends the
// TTL of cp.ConversationItemIDs not among items. Items are immutable (see
// Checkpoints); a tombstoned id fails with ErrDeleted.
func (s *RedisCheckpoints) PutResponse(ctx context.Context, cp *Checkpoint, items []Item) error {
	return s.put(ctx, cp, items, s.ttl)
}

// PutResponseHistory is PutResponse: Redis already holds the history.
func (s *RedisCheckpoints) PutResponseHistory(ctx context.Context, cp *Checkpoint, items, _ []Item) error {
	return s.put(ctx, cp, items, s.ttl)
}

// put is PutResponse with the TTL given (a re-published copy keeps only the
// rest of its life).
func (s *RedisCheckpoints) put(ctx context.Context, cp *Checkpoint, items []Item, ttl time.Duration) error {
	if err := checkPut(cp, items); err != nil {
		return err
	}
	op := fmt.Sprintf("put response %q", cp.ID)
	force := make([]byte, len(items))
	for i := range force {
		force[i] = '0'
	}
	for attempt := 0; ; attempt++ {
		res, err := s.runPut(ctx, cp, items, force, ttl)
		if err != nil {
			return redisErr(ctx, op, err)
		}
		switch {
		case len(res) == 1 && res[0] == 0:
			return nil
		case len(res) == 1 && res[0] == 1:
			return fmt.Errorf("%s: %w", op, ErrDeleted)
		case len(res) > 1 && res[0] == 2 && attempt == 0:
			renamed := make(map[int]string, len(res)-1)
			for _, i := range res[1:] {
				if i < 1 || int(i) > len(items) {
					return fmt.Errorf("%s: script answered item %d of %d", op, i, len(items))
				}
				renamed[int(i)-1] = divertedID(items[i-1].ID, items[i-1].Data)
			}
			cp, items = divert(cp, items, renamed)
			for i := range renamed {
				// Content-addressed: the derived key holds these bytes (or
				// the same bytes sealed under an older key).
				force[i] = '1'
			}
			s.counters.diverted.Add(uint64(len(renamed)))
		default:
			return fmt.Errorf("%s: unexpected script answer %v", op, res)
		}
	}
}

func (s *RedisCheckpoints) runPut(ctx context.Context, cp *Checkpoint, items []Item, force []byte, ttl time.Duration) ([]int64, error) {
	rec, err := s.sealRecord(cp, s.now().Add(ttl))
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, 2+len(cp.ConversationItemIDs)+len(items))
	keys = append(keys, s.key(cp.Tenant, "resp", cp.ID), s.key(cp.Tenant, "tomb", cp.ID))
	args := make([]any, 0, 4+len(items))
	args = append(args, ttl.Milliseconds(), rec, len(items))
	written := make(map[string]bool, len(items))
	for _, it := range items {
		v, err := s.sealItem(cp.Tenant, it.ID, it.Data)
		if err != nil {
			return nil, err
		}
		written[it.ID] = true
		keys = append(keys, s.key(cp.Tenant, "item", it.ID))
		args = append(args, v)
	}
	args = append(args, string(force))
	for _, id := range cp.ConversationItemIDs {
		if !written[id] && validStoredID(id) {
			written[id] = true
			keys = append(keys, s.key(cp.Tenant, "item", id))
		}
	}
	return putScript.Run(ctx, s.c, keys, args...).Int64Slice()
}

// GetResponse returns the checkpoint for tenant and id, or ErrNotFound (also
// for another tenant's id, an expired one, ErrDeleted for a deleted one, and
// ErrCorrupt for a value that does not verify or decode, counted).
func (s *RedisCheckpoints) GetResponse(ctx context.Context, tenant, id string) (*Checkpoint, error) {
	op := fmt.Sprintf("get response %q", truncate(id))
	if checkKey(tenant, id) != nil {
		return nil, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	var get *redis.StringCmd
	var tomb *redis.IntCmd
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		get = p.Get(ctx, s.key(tenant, "resp", id))
		tomb = p.Exists(ctx, s.key(tenant, "tomb", id))
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, redisErr(ctx, op, err)
	}
	if tomb.Val() > 0 {
		return nil, fmt.Errorf("%s: %w", op, ErrDeleted)
	}
	b, err := get.Bytes()
	if err != nil {
		return nil, redisErr(ctx, op, err)
	}
	cp, err := s.openRecord(tenant, id, b)
	if err != nil {
		s.counters.corrupt.Add(1)
		return nil, corrupt(op, err)
	}
	return cp, nil
}

// GetItems returns the items in the order of ids (one MGET); a missing id,
// or one whose value does not verify or is not valid JSON (counted as
// corrupt), fails the call with ErrNotFound naming it.
func (s *RedisCheckpoints) GetItems(ctx context.Context, tenant string, ids []string) ([]Item, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	keys := make([]string, len(ids))
	for i, id := range ids {
		if !validTenant(tenant) || !validStoredID(id) {
			return nil, fmt.Errorf("get item %q: %w", truncate(id), ErrNotFound)
		}
		keys[i] = s.key(tenant, "item", id)
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
		data, err := s.openItem(tenant, ids[i], []byte(str))
		if err != nil {
			s.counters.corrupt.Add(1)
			return nil, corrupt(fmt.Sprintf("get item %q", truncate(ids[i])), err)
		}
		items[i] = Item{ID: ids[i], Data: data}
	}
	return items, nil
}

// deleteScript: KEYS = record, tombstone; ARGV = ttl ms, force ('1': write
// the tombstone even when the record is absent). Returns 1 if the record
// existed, and whether a tombstone was written, as {existed, tombstoned}.
var deleteScript = redis.NewScript(`
local existed = redis.call('DEL', KEYS[1])
if existed == 1 or ARGV[2] == '1' then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
  return {existed, 1}
end
return {existed, 0}
`)

// DeleteResponse replaces the record with a tombstone kept for the TTL and
// announces the deletion on the deletions stream, so every pod drops its
// local copy. Items expire with their TTL. An unknown id is ErrNotFound.
func (s *RedisCheckpoints) DeleteResponse(ctx context.Context, tenant, id string) error {
	existed, err := s.deleteResponse(ctx, tenant, id, false)
	if err == nil && !existed {
		err = fmt.Errorf("delete response %q: %w", truncate(id), ErrNotFound)
	}
	return err
}

// deleteResponse deletes id; with force it leaves a tombstone (and announces
// it) even when the record is absent (a Fallback whose local copy Redis has
// forgotten, or a replayed delete).
func (s *RedisCheckpoints) deleteResponse(ctx context.Context, tenant, id string, force bool) (existed bool, err error) {
	op := fmt.Sprintf("delete response %q", truncate(id))
	if checkKey(tenant, id) != nil {
		return false, fmt.Errorf("%s: %w", op, ErrNotFound)
	}
	f := "0"
	if force {
		f = "1"
	}
	res, err := deleteScript.Run(ctx, s.c, []string{s.key(tenant, "resp", id), s.key(tenant, "tomb", id)},
		s.ttl.Milliseconds(), f).Int64Slice()
	if err != nil {
		return false, redisErr(ctx, op, err)
	}
	if len(res) != 2 {
		return false, fmt.Errorf("%s: unexpected script answer %v", op, res)
	}
	if res[1] == 1 {
		// Another slot in Redis Cluster, so not in the script. If it fails,
		// the tombstone still holds in Redis; only pods' local copies miss it.
		err := s.c.XAdd(ctx, &redis.XAddArgs{Stream: s.prefix + ":deletions", MaxLen: s.deletions, Approx: true,
			Values: []any{"t", tenant, "i", id}}).Err()
		if err != nil {
			return res[0] == 1, redisErr(ctx, op+": announce", err)
		}
	}
	return res[0] == 1, nil
}

// deletion is an entry of the deletions stream.
type deletion struct{ tenant, id string }

// deletionsAfter returns up to n deletions announced after cursor (a stream
// id; "" for the oldest kept) and the cursor of the last one ("" if none).
func (s *RedisCheckpoints) deletionsAfter(ctx context.Context, cursor string, n int64) ([]deletion, string, error) {
	start := "-"
	if cursor != "" {
		start = "(" + cursor
	}
	msgs, err := s.c.XRangeN(ctx, s.prefix+":deletions", start, "+", n).Result()
	if err != nil {
		return nil, "", redisErr(ctx, "read deletions", err)
	}
	dels := make([]deletion, 0, len(msgs))
	next := ""
	for _, m := range msgs {
		next = m.ID
		t, _ := m.Values["t"].(string)
		i, _ := m.Values["i"].(string)
		if checkKey(t, i) == nil {
			dels = append(dels, deletion{t, i})
		}
	}
	return dels, next, nil
}

// epoch returns the shared store's epoch, creating it when absent: a value
// that changes exactly when Redis lost its data (restart without
// persistence, FLUSHALL, eviction of the key).
func (s *RedisCheckpoints) epoch(ctx context.Context) (string, error) {
	k := s.prefix + ":epoch"
	v, err := s.c.Get(ctx, k).Result()
	if errors.Is(err, redis.Nil) {
		var b [12]byte
		_, _ = rand.Read(b[:])
		if err = s.c.SetNX(ctx, k, hex.EncodeToString(b[:]), 0).Err(); err == nil {
			v, err = s.c.Get(ctx, k).Result()
		}
	}
	if err != nil {
		return "", redisErr(ctx, "read epoch", err)
	}
	return strings.TrimSpace(v), nil
}

// CheckpointStats returns the store's counters (Corrupt, Diverted).
func (s *RedisCheckpoints) CheckpointStats() CheckpointStats { return s.counters.stats() }
