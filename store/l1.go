package store

import (
	"context"
	"fmt"
	"math/bits"
	"sync/atomic"
	"time"

	"github.com/allegro/bigcache/v3"
)

// L1Options configures the in-process artifact cache. The zero value is
// ready to use.
type L1Options struct {
	// MaxMB caps the cache's entry storage in MiB (bigcache
	// HardMaxCacheSize); the storage is reserved up front and the oldest
	// entries are evicted to make room. Zero means 256. Resident memory is this
	// plus the index (about 30 bytes per entry) plus, per shard, a write buffer
	// as large as the largest entry written.
	MaxMB int
	// MaxEntryBytes is the largest sealed artifact cached; larger ones are
	// skipped (counted as too_large) and live only in L2. Zero means 1 MiB
	// (roughly 400k token ids). It also sets the shard count: each shard holds
	// at least two maximum-size entries, so a small MaxMB means few shards.
	MaxEntryBytes int
	// TTL is how long an entry may live (bigcache LifeWindow, one-second
	// resolution). Zero means one hour. Sealed artifacts carry their own expiry,
	// checked on every read, so this only bounds memory held by dead entries.
	TTL time.Duration
	// CleanInterval is how often expired entries are swept. Zero means one
	// minute.
	CleanInterval time.Duration
}

// L1 is the per-process artifact tier: sealed artifact bytes in
// allegro/bigcache, bounded by bytes, expiring, keyed by tenant and response
// id. It is safe for concurrent use. It never decodes what it holds; see
// Tiered for the checked path.
type L1 struct {
	c             *bigcache.BigCache
	maxEntryBytes int
	shards        int

	sets, setErrors, tooLarge atomic.Uint64
	expired, noSpace, deleted atomic.Uint64
}

// L1Stats is a snapshot of L1 counters for metrics. Counters only grow.
type L1Stats struct {
	// Entries is the number of entries held now.
	Entries int
	// CapacityBytes is the entry storage allocated now (<= MaxMB MiB).
	CapacityBytes int
	// Shards is the bigcache shard count chosen from the options.
	Shards int
	// Hits, Misses count Get outcomes; Collisions counts 64-bit key-hash
	// collisions (reported as misses).
	Hits, Misses, Collisions uint64
	// Sets counts successful Set calls; SetErrors failed ones; TooLarge
	// values skipped for exceeding MaxEntryBytes.
	Sets, SetErrors, TooLarge uint64
	// Evicted* count removals by reason: past TTL, room for newer entries,
	// explicit Delete.
	EvictedExpired, EvictedNoSpace, Deleted uint64
}

// NewL1 returns an L1 cache. Close it to stop its cleaner goroutine.
func NewL1(opts L1Options) (*L1, error) {
	if opts.MaxMB <= 0 {
		opts.MaxMB = 256
	}
	if opts.MaxEntryBytes <= 0 {
		opts.MaxEntryBytes = 1 << 20
	}
	if opts.TTL <= 0 {
		opts.TTL = time.Hour
	}
	if opts.CleanInterval <= 0 {
		opts.CleanInterval = time.Minute
	}
	capBytes := opts.MaxMB << 20
	if opts.MaxEntryBytes > capBytes/2 {
		opts.MaxEntryBytes = capBytes / 2
	}
	// bigcache splits the cap evenly across shards and rejects an entry larger
	// than its shard, so pick the largest power of two (at most 256) that
	// leaves room for two maximum-size entries per shard.
	perShardMin := 2 * (opts.MaxEntryBytes + entryOverhead)
	shards := 1
	if n := capBytes / perShardMin; n > 1 {
		shards = 1 << (bits.Len(uint(n)) - 1)
	}
	shards = min(shards, 256)
	shardBytes := capBytes / shards
	if shardBytes >= 1<<32-1 {
		// bigcache indexes a shard's queue with uint32.
		return nil, fmt.Errorf("new L1 cache: %d MiB in %d shards exceeds 4 GiB per shard; lower MaxEntryBytes", opts.MaxMB, shards)
	}
	// Size the initial queue to the whole shard (capped by bigcache to the
	// hard limit): growing by doubling would reject an entry that fits the
	// limit but not the remaining growth step. The pages are only touched as
	// entries are written. entryBufferBytes sizes bigcache's per-shard write
	// buffer, which grows on demand to the largest entry.
	const entryBufferBytes = 4 << 10
	perShardEntries := shardBytes/entryBufferBytes + 1
	l := &L1{maxEntryBytes: opts.MaxEntryBytes, shards: shards}
	cfg := bigcache.Config{
		Shards:             shards,
		LifeWindow:         opts.TTL,
		CleanWindow:        opts.CleanInterval,
		MaxEntriesInWindow: shards * perShardEntries,
		MaxEntrySize:       entryBufferBytes,
		HardMaxCacheSize:   opts.MaxMB,
		Logger:             nopBigcacheLogger{},
		OnRemoveWithReason: l.onRemove,
	}
	// context.Background: the cleaner stops on Close, and bigcache prints to
	// stdout when its context is cancelled instead.
	c, err := bigcache.New(context.Background(), cfg)
	if err != nil {
		return nil, fmt.Errorf("new L1 cache: %w", err)
	}
	l.c = c
	return l, nil
}

// entryOverhead is bigcache's per-entry header (timestamp, hash, key length)
// plus its queue length prefix and a typical key.
const entryOverhead = 8 + 8 + 2 + 5 + 64

func (l *L1) onRemove(_ string, _ []byte, reason bigcache.RemoveReason) {
	// Called under a shard lock: count only.
	switch reason {
	case bigcache.Expired:
		l.expired.Add(1)
	case bigcache.NoSpace:
		l.noSpace.Add(1)
	case bigcache.Deleted:
		l.deleted.Add(1)
	}
}

// Get returns a copy of the sealed bytes for tenant and id, reporting whether
// they were present. A present value may still be expired or invalid; open it
// with a Sealer.
func (l *L1) Get(tenant, id string) ([]byte, bool) {
	v, err := l.c.Get(localKey(tenant, id))
	if err != nil {
		return nil, false
	}
	return v, true
}

// Set stores a copy of sealed under tenant and id, replacing any previous
// value and evicting the oldest entries of its shard if needed. Values over
// MaxEntryBytes are skipped with an error.
func (l *L1) Set(tenant, id string, sealed []byte) error {
	if len(sealed) > l.maxEntryBytes {
		l.tooLarge.Add(1)
		return fmt.Errorf("L1 set %q: %d bytes over the %d-byte entry limit", truncate(id), len(sealed), l.maxEntryBytes)
	}
	if err := l.c.Set(localKey(tenant, id), sealed); err != nil {
		l.setErrors.Add(1)
		return fmt.Errorf("L1 set %q: %w", truncate(id), err)
	}
	l.sets.Add(1)
	return nil
}

// Delete removes the entry for tenant and id, if any.
func (l *L1) Delete(tenant, id string) {
	_ = l.c.Delete(localKey(tenant, id)) // the only error is "not found"
}

// Stats returns current counters.
func (l *L1) Stats() L1Stats {
	bs := l.c.Stats()
	return L1Stats{
		Entries:        l.c.Len(),
		CapacityBytes:  l.c.Capacity(),
		Shards:         l.shards,
		Hits:           uint64(bs.Hits),
		Misses:         uint64(bs.Misses),
		Collisions:     uint64(bs.Collisions),
		Sets:           l.sets.Load(),
		SetErrors:      l.setErrors.Load(),
		TooLarge:       l.tooLarge.Load(),
		EvictedExpired: l.expired.Load(),
		EvictedNoSpace: l.noSpace.Load(),
		Deleted:        l.deleted.Load(),
	}
}

// Close stops the background cleaner. The cache must not be used afterwards.
func (l *L1) Close() error {
	return l.c.Close()
}

type nopBigcacheLogger struct{}

func (nopBigcacheLogger) Printf(string, ...any) {}
