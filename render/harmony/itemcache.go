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
type ItemCache struct {
	mu       sync.Mutex
	m        map[string]map[string]*cachedItem // by tenant, then the item's bytes
	order    []itemKey                         // insertion order, from order[head]
	head     int
	bytes    int
	maxBytes int
}

// cachedItem is an item's parse: its type, a function call's call_id and name, an output's
// call_id, and its message (ok: it makes one; an output's without Name). Immutable.
type cachedItem struct {
	typ, callID, name string
	msg               Message
	ok                bool
	size              int
}

// itemKey names an entry: its tenant and the item's bytes.
type itemKey struct{ tenant, raw string }

// cachedOverhead is what an entry costs besides its strings: the entry, its map and queue slots.
const cachedOverhead = 256

// NewItemCache returns an empty cache of at most maxBytes.
func NewItemCache(maxBytes int) *ItemCache {
	return &ItemCache{m: make(map[string]map[string]*cachedItem), maxBytes: maxBytes}
}

func (c *ItemCache) get(tenant string, raw []byte) *cachedItem {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[tenant][string(raw)]
}

func (c *ItemCache) put(tenant string, raw []byte, it *cachedItem) {
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
		c.bytes -= byTenant[old.raw].size
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
	c.m[tenant][key.raw] = it
	c.order = append(c.order, key)
	c.bytes += it.size
}

// Len returns the number of cached items.
func (c *ItemCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order) - c.head
}
