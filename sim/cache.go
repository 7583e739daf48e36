package sim

import (
	"encoding/binary"
	"hash/maphash"
	"sync"
)

// blockHash identifies a full KV block by its tokens and everything before them: vLLM's
// H(parent hash, block tokens, extra keys), with cache_salt as an extra key of the first block.
type blockHash uint64

// kvBlock is one cached block. refs counts running requests that hold it; a block with no refs
// sits in the free list and may be evicted.
type kvBlock struct {
	hash blockHash
	refs int
	// state reports whether a hybrid model's recurrent state was saved at this block's end (see
	// Options.Hybrid); unused for full attention.
	state      bool
	prev, next *kvBlock // free-list links, nil unless refs == 0
}

// prefixCache models vLLM's automatic prefix cache at block granularity. It holds no KV data,
// only which blocks would be resident. Safe for concurrent use.
type prefixCache struct {
	blockSize int
	capacity  int
	hybrid    bool // a hit must end at a block with a saved state
	// chunkBlocks is the prefill chunk in whole blocks (hybrid only): a long prefill saves the
	// state at the end of every chunk; 0: one chunk.
	chunkBlocks int
	seed        maphash.Seed

	mu     sync.Mutex
	blocks map[blockHash]*kvBlock
	// free is the eviction queue of unreferenced blocks: head is evicted first.
	freeHead, freeTail *kvBlock
	freeLen            int
	queries, hits      uint64
	// events receives the cache's block events (vLLM's KV events); nil: none are made.
	events KVEventSink
}

func newPrefixCache(blockSize, capacity int, hybrid bool, prefillChunk int, events KVEventSink) *prefixCache {
	return &prefixCache{
		events:      events,
		blockSize:   blockSize,
		capacity:    capacity,
		hybrid:      hybrid,
		chunkBlocks: prefillChunk / blockSize,
		seed:        maphash.MakeSeed(),
		blocks:      make(map[blockHash]*kvBlock),
	}
}

// cacheKey holds the extra keys of a request's first block: requests with different keys never
// share a block.
type cacheKey struct {
	lora, salt string
}

// lease is the set of blocks a running request holds, in chain order, plus the chain of hashes
// computed so far.
type lease struct {
	key    cacheKey
	hashes []blockHash // hashes of the full blocks seen so far, in order
	held   []*kvBlock
}

// extendHashes appends to hashes the chained hashes of the full blocks of tokens that follow the
// len(hashes) blocks already hashed. tokens is the whole sequence from position 0.
func (c *prefixCache) extendHashes(key cacheKey, hashes []blockHash, tokens []uint32) []blockHash {
	var h maphash.Hash
	h.SetSeed(c.seed)
	var buf [8]byte
	for b := len(hashes); (b+1)*c.blockSize <= len(tokens); b++ {
		h.Reset()
		if b == 0 {
			// Extra keys of the first block: the LoRA adapter and the salt, each length-prefixed so
			// that no pair encodes like another. (vLLM adds the LoRA name to every block; through
			// the chain, the first is enough.)
			for _, k := range [...]string{key.lora, key.salt} {
				binary.LittleEndian.PutUint64(buf[:], uint64(len(k)))
				h.Write(buf[:])
				h.WriteString(k)
			}
		} else {
			binary.LittleEndian.PutUint64(buf[:], uint64(hashes[b-1]))
			h.Write(buf[:])
		}
		for _, id := range tokens[b*c.blockSize : (b+1)*c.blockSize] {
			binary.LittleEndian.PutUint32(buf[:4], id)
			h.Write(buf[:4])
		}
		hashes = append(hashes, blockHash(h.Sum64()))
	}
	return hashes
}

// acquire looks prompt up and reserves its blocks for a new request. It returns the lease and the
// number of prompt tokens served from cache: vLLM's rule, the longest run of cached leading full
// blocks, capped at len(prompt)-1 tokens (the last prompt token is always computed) rounded down
// to whole blocks. readCache false (prompt_logprobs) counts no hits. The prompt's full blocks are
// cached right away, as vLLM does once prefill is scheduled.
func (c *prefixCache) acquire(key cacheKey, prompt []uint32, readCache bool) (*lease, int) {
	l := &lease{key: key}
	l.hashes = c.extendHashes(key, nil, prompt)
	maxHit := 0
	if readCache && len(prompt) > 0 {
		maxHit = (len(prompt) - 1) / c.blockSize
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	hit, stateHit := 0, 0
	for hit < maxHit {
		b, ok := c.blocks[l.hashes[hit]]
		if !ok {
			break
		}
		hit++
		if b.state {
			stateHit = hit
		}
	}
	if c.hybrid {
		// vLLM's hybrid coordinator: the attention hit is cut back to the last block whose
		// linear-attention state is cached ("align" mode saves states only at block boundaries).
		hit = stateHit
	}
	c.queries += uint64(len(prompt))
	c.hits += uint64(hit * c.blockSize)
	l.held = c.holdLocked(l.held, l.hashes, 0, key, prompt)
	if c.hybrid && len(l.held) > 0 && len(l.held) == len(l.hashes) {
		// Align mode schedules the prefill in whole blocks and saves the state at the end of each
		// chunk: every chunkBlocks blocks of the uncached part, and the prompt's last full block.
		if c.chunkBlocks > 0 {
			for i := hit + c.chunkBlocks - 1; i < len(l.held); i += c.chunkBlocks {
				l.held[i].state = true
			}
		}
		l.held[len(l.held)-1].state = true
	}
	return l, hit * c.blockSize
}

// release ends a request whose whole sequence (prompt then generated ids) is tokens. The full
// blocks of tokens[:len-1] are cached — the last sampled token was never forwarded, so it has no
// KV — then every held block is unreferenced, last block first so that a chain's tail is evicted
// before its head.
func (c *prefixCache) release(l *lease, tokens []uint32) {
	if len(tokens) > 0 {
		tokens = tokens[:len(tokens)-1]
	}
	n := len(l.hashes)
	l.hashes = c.extendHashes(l.key, l.hashes, tokens)

	c.mu.Lock()
	defer c.mu.Unlock()
	from := len(l.held)
	l.held = c.holdLocked(l.held, l.hashes, n, l.key, tokens)
	if c.hybrid && len(l.held) == len(l.hashes) {
		// Decoding crosses each new block boundary one token at a time, saving the state there.
		for _, b := range l.held[from:] {
			b.state = true
		}
	}
	for i := len(l.held) - 1; i >= 0; i-- {
		b := l.held[i]
		b.refs--
		if b.refs == 0 {
			c.pushFreeLocked(b)
		}
	}
	l.held = nil
}

// holdLocked references the blocks named by hashes, inserting missing ones while capacity allows
// (evicting the least recently freed unreferenced block when full), and appends them to held.
// A block that cannot be placed is skipped: later blocks of the chain can never be hit without it,
// which is what vLLM sees when it runs out of free blocks to cache. The blocks are chain[first:],
// chain being the hashes of key over tokens (the sequence from position 0); the insertions and
// evictions go to the event sink as one batch.
func (c *prefixCache) holdLocked(held []*kvBlock, chain []blockHash, first int, key cacheKey, tokens []uint32) []*kvBlock {
	hashes := chain[first:]
	var ev kvEventBuilder
	if c.events != nil {
		ev = kvEventBuilder{on: true, blockSize: c.blockSize, key: key, tokens: tokens}
	}
	for i, h := range hashes {
		b, ok := c.blocks[h]
		if ok {
			if b.refs == 0 {
				c.unlinkFreeLocked(b)
			}
			b.refs++
			held = append(held, b)
			continue
		}
		if len(c.blocks) >= c.capacity {
			victim := c.freeHead
			if victim == nil {
				continue
			}
			c.unlinkFreeLocked(victim)
			delete(c.blocks, victim.hash)
			ev.removed(victim.hash)
		}
		b = &kvBlock{hash: h, refs: 1}
		c.blocks[h] = b
		held = append(held, b)
		ev.stored(chain, first+i)
	}
	if evs := ev.events(); len(evs) > 0 {
		c.events.Publish(evs)
	}
	return held
}

func (c *prefixCache) pushFreeLocked(b *kvBlock) {
	b.prev, b.next = c.freeTail, nil
	if c.freeTail != nil {
		c.freeTail.next = b
	} else {
		c.freeHead = b
	}
	c.freeTail = b
	c.freeLen++
}

func (c *prefixCache) unlinkFreeLocked(b *kvBlock) {
	if b.prev != nil {
		b.prev.next = b.next
	} else {
		c.freeHead = b.next
	}
	if b.next != nil {
		b.next.prev = b.prev
	} else {
		c.freeTail = b.prev
	}
	b.prev, b.next = nil, nil
	c.freeLen--
}

// cacheStats is a snapshot of the prefix cache.
type cacheStats struct {
	queries, hits uint64 // tokens looked up and tokens found, since start
	blocks, used  int    // cached blocks, and those held by running requests
}

func (c *prefixCache) stats() cacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	return cacheStats{queries: c.queries, hits: c.hits, blocks: len(c.blocks), used: len(c.blocks) - c.freeLen}
}

// kvEventBuilder collects one cache operation's events in order: consecutive stored blocks of a
// chain become one BlockStored, consecutive evictions one BlockRemoved. The zero value (on false)
// records nothing.
type kvEventBuilder struct {
	on        bool
	blockSize int
	key       cacheKey
	tokens    []uint32
	evs       []KVEvent
	lastIdx   int // chain index of the last block of a trailing BlockStored
}

// stored records that block idx of chain was cached.
func (b *kvEventBuilder) stored(chain []blockHash, idx int) {
	if !b.on {
		return
	}
	if n := len(b.evs); n > 0 && b.lastIdx == idx-1 {
		if s, ok := b.evs[n-1].(BlockStored); ok {
			s.BlockHashes = append(s.BlockHashes, uint64(chain[idx]))
			s.TokenIDs = append(s.TokenIDs, b.tokens[idx*b.blockSize:(idx+1)*b.blockSize]...)
			if s.ExtraKeys != nil {
				s.ExtraKeys = append(s.ExtraKeys, b.extraKeys(idx))
			}
			b.evs[n-1], b.lastIdx = s, idx
			return
		}
	}
	s := BlockStored{
		BlockHashes: []uint64{uint64(chain[idx])},
		TokenIDs:    append([]uint32(nil), b.tokens[idx*b.blockSize:(idx+1)*b.blockSize]...),
		BlockSize:   b.blockSize,
		LoRAName:    b.key.lora,
	}
	if idx > 0 {
		s.ParentHash, s.HasParent = uint64(chain[idx-1]), true
	}
	if b.key.lora != "" || b.key.salt != "" {
		s.ExtraKeys = [][]string{b.extraKeys(idx)}
	}
	b.evs, b.lastIdx = append(b.evs, s), idx
}

// extraKeys are vLLM's extra hash keys of block idx: the LoRA adapter's name on every block, then
// cache_salt on the first (vllm/v1/core/kv_cache_utils.py, generate_block_hash_extra_keys).
func (b *kvEventBuilder) extraKeys(idx int) []string {
	var keys []string
	if b.key.lora != "" {
		keys = append(keys, b.key.lora)
	}
	if idx == 0 && b.key.salt != "" {
		keys = append(keys, b.key.salt)
	}
	return keys
}

// removed records that the block h was evicted.
func (b *kvEventBuilder) removed(h blockHash) {
	if !b.on {
		return
	}
	if n := len(b.evs); n > 0 {
		if r, ok := b.evs[n-1].(BlockRemoved); ok {
			r.BlockHashes = append(r.BlockHashes, uint64(h))
			b.evs[n-1] = r
			return
		}
	}
	b.evs = append(b.evs, BlockRemoved{BlockHashes: []uint64{uint64(h)}})
	b.lastIdx = -2
}

func (b *kvEventBuilder) events() []KVEvent { return b.evs }

// reset drops every unreferenced block, as vLLM's POST /reset_prefix_cache, and reports whether
// the cache is now empty: blocks held by running requests stay (vLLM refuses the reset then).
func (c *prefixCache) reset() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.freeLen != len(c.blocks) {
		return false
	}
	clear(c.blocks)
	c.freeHead, c.freeTail, c.freeLen = nil, nil, 0
	if c.events != nil {
		c.events.Publish([]KVEvent{AllBlocksCleared{}})
	}
	return true
}
