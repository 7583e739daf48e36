package bpe

import (
	"math"
	"strings"
	"sync/atomic"
)

const (
	noRank = math.MaxUint32
	// smallWord is the longest pre-token (in bytes) merged by rescanning; longer ones use a heap.
	smallWord = 48
	// maxCachedWord is the longest pre-token kept in the word cache, as in the Rust crate.
	maxCachedWord = 256
	// defaultCacheWords bounds the word cache (about 90 bytes a word, so at most ~12 MB).
	defaultCacheWords = 1 << 17
)

// appendWord appends the BPE ids of one pre-token (raw bytes) to dst.
func (t *Tokenizer) appendWord(dst []uint32, w *merger, word string) []uint32 {
	switch len(word) {
	case 0:
		return dst
	case 1:
		return append(dst, t.byteID[word[0]])
	}
	// ignore_merges: a pre-token that is itself a vocab token is emitted whole.
	if t.ignoreMerges {
		if id, ok := t.vocab.get(word); ok {
			return append(dst, id)
		}
	}
	if len(word) == 2 { // one merge or none: cheaper than the cache
		if v := t.bytePairs[uint16(word[0])<<8|uint16(word[1])]; uint32(v>>32) != noRank {
			return append(dst, uint32(v))
		}
		return append(dst, t.byteID[word[0]], t.byteID[word[1]])
	}
	cacheable := len(word) <= maxCachedWord
	if cacheable {
		if ids, ok := t.cache.get(word); ok {
			return append(dst, ids...)
		}
	}
	start := len(dst)
	if len(word) <= smallWord {
		dst = w.mergeSmall(t, dst, word)
	} else {
		dst = w.mergeHeap(t, dst, word)
	}
	if cacheable {
		t.cache.put(word, dst[start:])
	}
	return dst
}

// merger holds the reusable buffers of BPE merging.
type merger struct {
	ids, ranks, merged []uint32
	prev, next         []int32
	heap               []uint64
}

// mergeSmall applies merges like the Rust crate's Word::merge_all: always the pair of lowest rank,
// the leftmost among equals. It rescans the pairs after every merge, which is fastest for short words.
func (w *merger) mergeSmall(t *Tokenizer, dst []uint32, word string) []uint32 {
	ids := w.ids[:0]
	for i := 0; i < len(word); i++ {
		ids = append(ids, t.byteID[word[i]])
	}
	ranks, merged := w.ranks[:0], w.merged[:0]
	for i := 0; i+1 < len(word); i++ {
		v := t.bytePairs[uint16(word[i])<<8|uint16(word[i+1])]
		ranks = append(ranks, uint32(v>>32))
		merged = append(merged, uint32(v))
	}
	for {
		best, bestRank := -1, uint32(noRank)
		for i, r := range ranks {
			if r < bestRank {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		ids[best] = merged[best]
		ids = append(ids[:best+1], ids[best+2:]...)
		ranks = append(ranks[:best], ranks[best+1:]...)
		merged = append(merged[:best], merged[best+1:]...)
		if best > 0 {
			ranks[best-1], merged[best-1] = t.pairRank(ids[best-1], ids[best])
		}
		if best < len(ranks) {
			ranks[best], merged[best] = t.pairRank(ids[best], ids[best+1])
		}
	}
	w.ids, w.ranks, w.merged = ids, ranks, merged
	return append(dst, ids...)
}

func (t *Tokenizer) pairRank(a, b uint32) (uint32, uint32) {
	r, m, ok := t.merges.get(a, b)
	if !ok {
		return noRank, 0
	}
	return r, m
}

// mergeHeap gives the same result as mergeSmall in O(n log n), with the Rust crate's algorithm: a
// priority queue of candidate merges by (rank, position) over a linked list of symbols, skipping
// candidates made stale by earlier merges. A candidate is rank<<32 | position, so one integer
// comparison orders the queue; a rank names exactly one pair, so a candidate is still valid when
// the pair now at its position has its rank.
func (w *merger) mergeHeap(t *Tokenizer, dst []uint32, word string) []uint32 {
	n := len(word)
	ids := grow(w.ids, n)
	prev, next := grow(w.prev, n), grow(w.next, n)
	for i := range n {
		ids[i] = t.byteID[word[i]]
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	h := w.heap[:0]
	for i := 0; i+1 < n; i++ {
		if v := t.bytePairs[uint16(word[i])<<8|uint16(word[i+1])]; uint32(v>>32) != noRank {
			h = heapPush(h, v>>32<<32|uint64(i))
		}
	}
	const removed = math.MaxUint32
	for len(h) > 0 {
		var top uint64
		top, h = heapPop(h)
		p := int32(uint32(top))
		if ids[p] == removed || next[p] < 0 {
			continue
		}
		q := next[p]
		r, merged, ok := t.merges.get(ids[p], ids[q])
		if !ok || r != uint32(top>>32) {
			continue // stale: the pair at p changed since this candidate was queued
		}
		ids[p] = merged
		ids[q] = removed
		next[p] = next[q]
		if next[p] >= 0 {
			prev[next[p]] = p
		}
		if l := prev[p]; l >= 0 {
			if r, _, ok := t.merges.get(ids[l], ids[p]); ok {
				h = heapPush(h, uint64(r)<<32|uint64(l))
			}
		}
		if nx := next[p]; nx >= 0 {
			if r, _, ok := t.merges.get(ids[p], ids[nx]); ok {
				h = heapPush(h, uint64(r)<<32|uint64(p))
			}
		}
	}
	for i := int32(0); i >= 0; i = next[i] {
		dst = append(dst, ids[i])
	}
	w.ids, w.prev, w.next, w.heap = ids, prev, next, h
	return dst
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func heapPush(h []uint64, v uint64) []uint64 {
	h = append(h, v)
	for i := len(h) - 1; i > 0; {
		parent := (i - 1) / 2
		if h[parent] <= v {
			break
		}
		h[i] = h[parent]
		i = parent
		h[i] = v
	}
	return h
}

func heapPop(h []uint64) (uint64, []uint64) {
	top := h[0]
	last := len(h) - 1
	v := h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		if r := l + 1; r < len(h) && h[r] < h[l] {
			l = r
		}
		if v <= h[l] {
			break
		}
		h[i] = h[l]
		i = l
	}
	if len(h) > 0 {
		h[i] = v
	}
	return top, h
}

// wordCache remembers the ids of recent pre-tokens: a four-way set-associative table of immutable
// entries published through atomic pointers, so lookups take no lock and an insert into a full set
// replaces one of its entries (which bounds the memory). Safe for concurrent use.
type wordCache struct {
	slots []atomic.Pointer[cacheEntry]
	mask  uint64 // selects a set: a slot index that is a multiple of cacheWays
}

const cacheWays = 4

type cacheEntry struct {
	word   string
	ids    []uint32
	inline [4]uint32 // holds ids when there are at most 4, saving an allocation
}

func newWordCache(words int) *wordCache {
	size := cacheWays
	for size < words {
		size <<= 1
	}
	return &wordCache{slots: make([]atomic.Pointer[cacheEntry], size), mask: uint64(size-1) &^ (cacheWays - 1)}
}

func (c *wordCache) get(word string) ([]uint32, bool) {
	set := c.slots[hashBytes(word)&c.mask:][:cacheWays]
	for i := range set {
		e := set[i].Load()
		if e == nil {
			break
		}
		if e.word == word {
			return e.ids, true
		}
	}
	return nil, false
}

// put stores a copy of ids under a copy of word (which may point into a larger string).
func (c *wordCache) put(word string, ids []uint32) {
	h := hashBytes(word)
	set := c.slots[h&c.mask:][:cacheWays]
	e := &cacheEntry{word: strings.Clone(word)}
	if len(ids) <= len(e.inline) {
		e.ids = e.inline[:copy(e.inline[:], ids)]
	} else {
		e.ids = append([]uint32(nil), ids...)
	}
	for i := range set {
		if set[i].Load() == nil {
			set[i].Store(e)
			return
		}
	}
	set[h>>62].Store(e) // a full set: evict one entry, chosen by the hash
}
