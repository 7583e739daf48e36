package harmony

import "sync"

// ItemCache keeps gpt-oss conversation items mapped to messages across turns: every turn passes
// its earlier items again, byte for byte, and reading one (validating it, unescaping a tool
// output's text) cost most of a 100k-token continuation's preparation (issue 20). Entries are
// found by the item's exact bytes, so a hit is the item's own parse. Only items whose mapping
// depends on nothing but their bytes are kept: not system or developer messages (the deployment's
// instructions setting shapes them), and a tool output keeps its text without the function name,
// which the conversation's earlier call supplies at each use. Entries belong to the tenant whose
// request made them (Request.Tenant) and are found only by its requests: a hit skips work, and
// another tenant must not be able to time what was seen. At most maxBytes (item bytes, texts and
// a per-entry overhead) are held, the oldest entries evicted first. Safe for concurrent use; a
// nil *ItemCache keeps nothing.
//
// An item read from the response store under an id (Request.StoredIDs) is found by that id once
// its bytes matched an entry: the store keeps an item's bytes under its id (store.Checkpoints),
// so later turns check only the length and three samples of the bytes instead of hashing and
// comparing all of them, which read the whole history every turn (the cold cost of a long
// conversation). As render.ItemCache, this trusts the store's rule; an id the store let expire
// and took other bytes for is told apart by length and samples unless both agree, and never
// reaches another tenant's entry.
type ItemCache struct {
	mu       sync.Mutex
	m        map[string]map[string]*cachedItem // by tenant, then the item's bytes
	named    map[storedName]*cachedItem        // entries by the stored items found to hold their bytes
	order    []itemKey                         // insertion order, from order[head]
	head     int
	bytes    int
	maxBytes int
}

// cachedItem is an item's parse: its type, a function call's call_id and name, an output's
// call_id, and its message (ok: it makes one; an output's without Name). Immutable but for ids,
// which ItemCache.mu guards.
type cachedItem struct {
	typ, callID, name string
	msg               Message
	ok                bool
	size              int
	raw               string   // the item's bytes (the map key)
	ids               []string // stored ids found to hold raw, at most maxNamesPerItem
}

// itemKey names an entry: its tenant and the item's bytes.
type itemKey struct{ tenant, raw string }

// storedName is an item of the response store: its tenant and id.
type storedName struct{ tenant, id string }

// cachedOverhead is what an entry costs besides its strings: the entry, its map and queue slots;
// nameOverhead what a stored id costs besides its bytes.
const (
	cachedOverhead  = 256
	nameOverhead    = 96
	maxNamesPerItem = 4
	sampleLen       = 128
)

// NewItemCache returns an empty cache of at most maxBytes.
func NewItemCache(maxBytes int) *ItemCache {
	return &ItemCache{m: make(map[string]map[string]*cachedItem), named: make(map[storedName]*cachedItem), maxBytes: maxBytes}
}

// get returns tenant's entry for raw, read from the store under id ("": not a stored item).
func (c *ItemCache) get(tenant, id string, raw []byte) *cachedItem {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if id != "" {
		if it := c.named[storedName{tenant, id}]; it != nil && samplesEqual(it.raw, raw) {
			return it
		}
	}
	it := c.m[tenant][string(raw)]
	if it != nil && id != "" {
		c.name(it, tenant, id)
	}
	return it
}

// samplesEqual reports whether a and b have the same length and the same first, middle and last
// sampleLen bytes (all of them when shorter).
func samplesEqual(a string, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) <= 3*sampleLen {
		return a == string(b)
	}
	mid := len(a)/2 - sampleLen/2
	return a[:sampleLen] == string(b[:sampleLen]) && a[mid:mid+sampleLen] == string(b[mid:mid+sampleLen]) &&
		a[len(a)-sampleLen:] == string(b[len(b)-sampleLen:])
}

// name records, under c.mu, that tenant's stored item id holds its bytes, while there is room.
func (c *ItemCache) name(it *cachedItem, tenant, id string) {
	key := storedName{tenant, id}
	size := len(id) + nameOverhead
	if old := c.named[key]; old != nil {
		if old == it {
			return
		}
		// The id's bytes changed (the store took other bytes under it after it expired).
		old.ids = deleteString(old.ids, id)
		old.size -= size
		c.bytes -= size
		delete(c.named, key)
	}
	if len(it.ids) >= maxNamesPerItem || c.bytes+size > c.maxBytes {
		return
	}
	it.ids = append(it.ids, id)
	it.size += size
	c.bytes += size
	c.named[key] = it
}

func deleteString(s []string, x string) []string {
	for i, v := range s {
		if v == x {
			return append(s[:i], s[i+1:]...)
		}
	}
	return s
}

// put caches it, the mapping of tenant's item raw, read from the store under id ("": not a
// stored item).
func (c *ItemCache) put(tenant, id string, raw []byte, it *cachedItem) {
	if c == nil || it == nil {
		return
	}
	it.size = 2*len(raw) + len(tenant) + len(it.callID) + len(it.name) + cachedOverhead
	for _, p := range it.msg.Parts {
		it.size += len(p)
	}
	if it.size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	key := itemKey{tenant, string(raw)}
	if _, ok := c.m[tenant][key.raw]; ok {
		return
	}
	for c.bytes+it.size > c.maxBytes && c.head < len(c.order) {
		old := c.order[c.head]
		c.order[c.head] = itemKey{}
		c.head++
		byTenant := c.m[old.tenant]
		gone := byTenant[old.raw]
		c.bytes -= gone.size
		for _, name := range gone.ids {
			delete(c.named, storedName{old.tenant, name})
		}
		if delete(byTenant, old.raw); len(byTenant) == 0 {
			delete(c.m, old.tenant)
		}
	}
	if c.head > len(c.order)/2 {
		c.order = append(c.order[:0], c.order[c.head:]...)
		c.head = 0
	}
	if c.m[tenant] == nil {
		c.m[tenant] = make(map[string]*cachedItem)
	}
	it.raw = key.raw
	c.m[tenant][key.raw] = it
	c.order = append(c.order, key)
	c.bytes += it.size
	if id != "" {
		c.name(it, tenant, id)
	}
}

// Len returns the number of cached items.
func (c *ItemCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order) - c.head
}
