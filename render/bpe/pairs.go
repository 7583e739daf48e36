package bpe

import "math/bits"

// pairTable maps a pair of token ids to the rank of their merge and the merged token's id. It is an
// open-addressing hash table with linear probing, built once at load and read-only afterwards:
// 16 bytes per slot at a load factor of at most 1/2, with no per-entry allocation.
type pairTable struct {
	slots []pairSlot
	mask  uint64
	shift uint
	n     int // entries
}

// pairSlot is one entry; key and value share a cache line.
type pairSlot struct {
	key uint64 // packPair(a, b); 0 marks an empty slot
	val uint64 // rank<<32 | merged id
}

func newPairTable(n int) *pairTable {
	size := uint64(16)
	for size < uint64(n)*2 {
		size <<= 1
	}
	return &pairTable{
		slots: make([]pairSlot, size),
		mask:  size - 1,
		shift: uint(64 - bits.TrailingZeros64(size)),
	}
}

// Ids are below 2^31 (checked at load), so the tag bit never collides with a pair.
func packPair(a, b uint32) uint64 { return uint64(a)<<32 | uint64(b) | 1<<63 }

func (p *pairTable) slot(key uint64) uint64 { return (key * 0x9E3779B97F4A7C15) >> p.shift }

func (p *pairTable) put(a, b, rank, merged uint32) {
	if 2*(p.n+1) > len(p.slots) { // the size estimate was low: keep the load factor at most 1/2
		bigger := newPairTable(2 * len(p.slots))
		for _, s := range p.slots {
			if s.key != 0 {
				bigger.putKey(s.key, s.val)
			}
		}
		*p = *bigger
	}
	p.putKey(packPair(a, b), uint64(rank)<<32|uint64(merged))
}

func (p *pairTable) putKey(key, val uint64) {
	for i := p.slot(key); ; i = (i + 1) & p.mask {
		switch p.slots[i].key {
		case 0:
			p.slots[i].key = key
			p.n++
			fallthrough
		case key:
			p.slots[i].val = val
			return
		}
	}
}

// get returns the merge rank and merged id of the pair (a, b), and whether the pair merges.
func (p *pairTable) get(a, b uint32) (rank, merged uint32, ok bool) {
	key := packPair(a, b)
	for i := p.slot(key); ; i = (i + 1) & p.mask {
		switch s := &p.slots[i]; s.key {
		case key:
			return uint32(s.val >> 32), uint32(s.val), true
		case 0:
			return 0, 0, false
		}
	}
}
