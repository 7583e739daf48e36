package render

import (
	"encoding/binary"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
)

// entryOverhead is what one cache entry costs besides its bytes: the entry (160 bytes on 64-bit
// platforms), its map slot and its queue slot, rounded up.
const entryOverhead = 256

// ItemCache keeps parsed Responses items, keyed by their exact bytes, for FromResponses
// (ResponsesInput.Cache). Every turn of a conversation passes the earlier items again, byte for
// byte; with a cache only the new ones are parsed. Only items that parse without error are kept,
// since errors name the item's position.
//
// Entries are found by a seeded hash of the item's bytes and returned only when the bytes equal
// the stored copy, so a hash collision costs a parse, never a wrong item. Every entry belongs to
// the tenant whose request made it and is found only by that tenant's requests: a hit skips a
// parse, and another tenant must not be able to time whether an item was seen. The cache holds at
// most maxBytes (item bytes, parsed strings and a per-entry overhead), evicting in insertion
// order but giving entries used since the last pass a second chance (CLOCK). It is safe for
// concurrent use.
type ItemCache struct {
	seed       maphash.Seed
	hash       func(maphash.Seed, []byte) uint64 // sampledHash; tests force collisions
	tenantSeed maphash.Seed                      // mixes the tenant into an entry's hash
	// prefixSeed keys ItemsPrefix digests.
	prefixSeed maphash.Seed
	maxBytes   int
	// digests holds *itemsDigest values for reuse: one per FromResponses call with stored items,
	// its buffer as long as their ids (newItemsDigest).
	digests sync.Pool

	toolsMu    sync.Mutex
	tools      map[toolsKey]*parsedTools // by tenant and the tools array's bytes
	toolsOrder []toolsKey                // insertion order, for eviction

	mu      sync.Mutex
	entries map[uint64]*cacheEntry
	stored  map[StoredItem]*cacheEntry // entries by the stored items verified to hold their bytes
	queue   []*cacheEntry              // entries in insertion order, from queue[head]
	head    int
	bytes   int
}

// cacheEntry is one cached item. hash, tenant, raw and item are immutable once the entry is in
// the map, so hits read them without the lock; size and stored change under ItemCache.mu.
type cacheEntry struct {
	hash       uint64
	tenant     string // whose requests find the entry
	raw        string // the item's bytes, compared on every hit but those by a stored item
	item       parsedItem
	size       int
	referenced atomic.Bool // hit since the eviction hand last passed
	// stored are the stored items found to hold raw (guarded by ItemCache.mu), at most
	// maxStoredPerEntry: removed from ItemCache.stored with the entry.
	stored []StoredItem
}

// StoredItem names an item in the response store: its tenant and id. The store keeps an item's
// bytes immutable under its id (store.Checkpoints: other bytes under a stored id get a derived
// id), so once an entry was found by comparing its bytes with an item read under that name,
// later reads under the name need not compare them again.
type StoredItem struct{ Tenant, ID string }

// maxStoredPerEntry bounds the names an entry keeps: the same bytes stored under many ids (a
// short message every conversation repeats) are compared instead past it.
const maxStoredPerEntry = 4

// storedOverhead is what one name costs besides its strings: its map slot and slice slot.
const storedOverhead = 96

// NewItemCache returns an empty cache holding at most maxBytes. Items larger than that are not
// cached.
func NewItemCache(maxBytes int) *ItemCache {
	return &ItemCache{
		seed:       maphash.MakeSeed(),
		hash:       sampledHash,
		prefixSeed: maphash.MakeSeed(),
		maxBytes:   maxBytes,
		entries:    make(map[uint64]*cacheEntry),
		stored:     make(map[StoredItem]*cacheEntry),
		tenantSeed: maphash.MakeSeed(),
		tools:      make(map[toolsKey]*parsedTools),
	}
}

// Len returns the number of cached items.
func (c *ItemCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// Bytes returns the accounted size of the cached items, never more than maxBytes.
func (c *ItemCache) Bytes() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}

// get returns the cached parse of raw for requests without a tenant, and raw's hash for put
// after a miss. A nil cache always misses. Small items are cached too: a hit on a 65-byte item
// costs ~40 ns, its parse ~400 ns (BenchmarkItemCacheHit).
func (c *ItemCache) get(raw []byte) (uint64, parsedItem, bool) {
	return c.getStored(StoredItem{}, 0, raw)
}

// tenantHash is what an entry's hash mixes in for tenant's items (0 for none), computed once per
// request.
func (c *ItemCache) tenantHash(tenant string) uint64 {
	if c == nil || tenant == "" {
		return 0
	}
	return maphash.String(c.tenantSeed, tenant)
}

// getStored is get for an item of name.Tenant's request (tenantHash its tenantHash), read from
// the store under name.ID ("": an item of the request's own input, found by its bytes alone). An
// entry
// already verified for the name is returned after checking only raw's length and sampled hash
// (issue 20: a 100k-token conversation's history is ~330 KB, compared on every turn otherwise,
// most of a continuation's cache misses); otherwise the bytes are compared as by get and, on a
// hit, the name is recorded. What this trusts is the store's rule; the one way around it is an
// item the store let expire and then took other bytes for under the same id, which the length
// and sampled hash tell apart unless they agree on both (then the tenant's own earlier parse is
// used until the entry is evicted; no other tenant's entry is ever reached by a name).
func (c *ItemCache) getStored(name StoredItem, tenantHash uint64, raw []byte) (uint64, parsedItem, bool) {
	if c == nil {
		return 0, parsedItem{}, false
	}
	h := c.hash(c.seed, raw) ^ tenantHash
	c.mu.Lock()
	// The entry the hash names, and whether name is one of its verified names (the stored map
	// holds the same pairs; a short slice is cheaper to search than two strings to hash).
	e := c.entries[h]
	named := e != nil && name.ID != "" && slices.Contains(e.stored, name)
	c.mu.Unlock()
	switch {
	case e == nil || e.hash != h || len(e.raw) != len(raw) || e.tenant != name.Tenant:
		return h, parsedItem{}, false
	case !named:
		// The hash only names a candidate: a different item with the same hash must miss.
		if e.raw != string(raw) {
			return h, parsedItem{}, false
		}
		if name.ID != "" {
			c.name(e, name)
		}
	}
	e.referenced.Store(true)
	return h, e.item, true
}

// name records that the stored item name holds e's bytes, while e is cached and has room.
func (c *ItemCache) name(e *cacheEntry, name StoredItem) {
	c.mu.Lock()
	defer c.mu.Unlock()
	size := len(name.Tenant) + len(name.ID) + storedOverhead
	if old := c.stored[name]; old != nil {
		if old == e {
			return
		}
		// The name's bytes changed (the store let the item expire and took other bytes under
		// its id): it now names e.
		old.stored = slices.DeleteFunc(old.stored, func(n StoredItem) bool { return n == name })
		old.size -= size
		c.bytes -= size
		delete(c.stored, name)
	}
	if c.entries[e.hash] != e || len(e.stored) >= maxStoredPerEntry {
		return
	}
	if c.bytes+size > c.maxBytes {
		return
	}
	e.stored = append(e.stored, name)
	e.size += size
	c.bytes += size
	c.stored[name] = e
}

// putStored is put for name.Tenant's item that also records name.ID (when set) for the new
// entry: raw was just read under it.
func (c *ItemCache) putStored(name StoredItem, h uint64, raw []byte, p parsedItem) {
	if e := c.put(name.Tenant, h, raw, p); e != nil && name.ID != "" {
		c.name(e, name)
	}
}

// put caches p, the parse of tenant's item raw, whose hash get or getStored returned, and
// returns the new entry (nil when nothing was added). The copy of raw is made outside the lock;
// parsing was too.
func (c *ItemCache) put(tenant string, h uint64, raw []byte, p parsedItem) *cacheEntry {
	if c == nil {
		return nil
	}
	size := len(raw) + len(tenant) + p.stringBytes() + entryOverhead
	if size > c.maxBytes {
		return nil
	}
	e := &cacheEntry{hash: h, tenant: tenant, raw: string(raw), item: p, size: size}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.entries[h] != nil {
		// Another request cached this item meanwhile, or another item has this hash: keep the
		// entry that is there (a colliding item is then parsed every time, which is rare
		// enough not to matter).
		return nil
	}
	c.evictFor(size)
	c.entries[h] = e
	c.queue = append(c.queue, e)
	c.bytes += size
	return e
}

// evictFor removes entries until size more bytes fit. The oldest entry goes first unless it was
// hit since the hand last passed it: then it moves to the back with its bit cleared. Second
// chances are limited to one pass over the queue, so eviction always ends even while other
// goroutines keep hitting (their bits are set without the lock).
func (c *ItemCache) evictFor(size int) {
	chances := len(c.queue) - c.head
	for c.bytes+size > c.maxBytes {
		e := c.pop()
		if chances > 0 && e.referenced.Swap(false) {
			chances--
			c.queue = append(c.queue, e)
			continue
		}
		delete(c.entries, e.hash)
		for _, name := range e.stored {
			delete(c.stored, name)
		}
		c.bytes -= e.size
	}
}

// pop removes the oldest entry from the queue. The consumed front is reclaimed once it is half
// of the slice, which keeps pop amortized O(1).
func (c *ItemCache) pop() *cacheEntry {
	e := c.queue[c.head]
	c.queue[c.head] = nil
	c.head++
	if c.head*2 >= len(c.queue) {
		n := copy(c.queue, c.queue[c.head:])
		clear(c.queue[n:])
		c.queue, c.head = c.queue[:n], 0
	}
	return e
}

// sampleSize is how many bytes of each end (and of the middle) of a long item sampledHash reads.
const sampleSize = 128

// sampledHash hashes an item's length and, for a long item, its first, middle and last
// sampleSize bytes. The hash only chooses the entry to compare; get compares every byte, so two
// items that differ only outside the samples share a slot (the second is parsed each time) but
// never each other's parse. Hashing all of a 300 KB conversation's items cost more than
// comparing them.
func sampledHash(seed maphash.Seed, b []byte) uint64 {
	if len(b) <= 3*sampleSize {
		return maphash.Bytes(seed, b) // all of it: the length is implied
	}
	// One call over the length and the samples gathered on the stack: maphash.Hash's buffered
	// Writes cost more than the bytes (a third of FromResponses on a long history).
	var buf [8 + 3*sampleSize]byte
	binary.LittleEndian.PutUint64(buf[:8], uint64(len(b)))
	mid := len(b)/2 - sampleSize/2
	copy(buf[8:], b[:sampleSize])
	copy(buf[8+sampleSize:], b[mid:mid+sampleSize])
	copy(buf[8+2*sampleSize:], b[len(b)-sampleSize:])
	return maphash.Bytes(seed, buf[:])
}

// toolsCacheEntries bounds the parsed tools arrays an ItemCache keeps: every request resends its
// client's tools, and a few clients' arrays cover a pod's traffic.
const toolsCacheEntries = 64

// parsedTools is a request's tools array parsed, with its digest. It is shared by every
// Conversation built from the same bytes: nothing may modify it.
type parsedTools struct {
	tools   []Tool
	skipped []string
	digest  string
}

// toolsKey names a tools array a tenant's request sent; like items, another tenant's requests do
// not find it.
type toolsKey struct{ tenant, raw string }

// getTools returns the parse of a tools array tenant sent before.
func (c *ItemCache) getTools(tenant string, raw []byte) (*parsedTools, bool) {
	if c == nil || len(raw) == 0 {
		return nil, false
	}
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	p, ok := c.tools[toolsKey{tenant, string(raw)}]
	return p, ok
}

// putTools keeps the parse of a tools array tenant sent, evicting the oldest beyond
// toolsCacheEntries. Arrays larger than a tenth of the cache are not kept.
func (c *ItemCache) putTools(tenant string, raw []byte, p *parsedTools) {
	if c == nil || len(raw) == 0 || len(raw) > c.maxBytes/10 {
		return
	}
	c.toolsMu.Lock()
	defer c.toolsMu.Unlock()
	key := toolsKey{tenant, string(raw)}
	if _, ok := c.tools[key]; ok {
		return
	}
	if len(c.toolsOrder) == toolsCacheEntries {
		delete(c.tools, c.toolsOrder[0])
		c.toolsOrder = c.toolsOrder[1:]
	}
	c.tools[key] = p
	c.toolsOrder = append(c.toolsOrder, key)
}
