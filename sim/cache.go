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
}

func newPrefixCache(blockSize, capacity int, hybrid bool, prefillChunk int) *prefixCache {
	return &prefixCache{
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
	l.held = c.holdLocked(l.held, l.hashes)
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
	l.held = c.holdLocked(l.held, l.hashes[n:])
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
// which is what vLLM sees when it runs out of free blocks to cache.
func (c *prefixCache) holdLocked(held []*kvBlock, hashes []blockHash) []*kvBlock {
	for _, h := range hashes {
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
		}
		b = &kvBlock{hash: h, refs: 1}
		c.blocks[h] = b
		held = append(held, b)
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
