package bpe

import (
	"encoding/binary"
	"math/bits"
)

// vocabTable maps the raw bytes of a vocab token to its id. It is an open-addressing hash table of
// 8-byte slots (32 bits of hash, id+1) whose keys live in the tokenizer's arena, built once at load:
// about a third of the memory of a Go map, with no per-entry allocation, and lookups that touch the
// arena only when the hash bits agree.
type vocabTable struct {
	slots []uint64
	mask  uint64
	arena string
	spans []uint32 // start and end of id i in arena at 2i, 2i+1
}

func newVocabTable(n int, arena string, spans []uint32) *vocabTable {
	size := uint64(16)
	for size < uint64(n)*2 {
		size <<= 1
	}
	return &vocabTable{slots: make([]uint64, size), mask: size - 1, arena: arena, spans: spans}
}

// hashBytes is a fast non-cryptographic hash of short byte strings (wyhash-style mixing).
func hashBytes[S ~string | ~[]byte](s S) uint64 {
	const (
		m1 = 0xa0761d6478bd642f
		m2 = 0xe7037ed1a0b428db
	)
	h := uint64(len(s)) * m1
	for len(s) >= 8 {
		v := binary.LittleEndian.Uint64([]byte(s[:8]))
		hi, lo := bits.Mul64(v^m2, h^m1)
		h = hi ^ lo
		s = s[8:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		v |= uint64(s[i]) << (8 * i)
	}
	hi, lo := bits.Mul64(v^m2, h^m1)
	return hi ^ lo ^ h
}

// put adds the token of id (arena[start[id]:end[id]]) and reports whether its bytes were new.
func (v *vocabTable) put(id uint32) bool {
	key := v.arena[v.spans[2*id]:v.spans[2*id+1]]
	h := hashBytes(key)
	tag := h >> 32 << 32
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		e := v.slots[i]
		if e == 0 {
			v.slots[i] = tag | uint64(id+1)
			return true
		}
		if e&^0xFFFFFFFF == tag {
			other := uint32(e) - 1
			if v.arena[v.spans[2*other]:v.spans[2*other+1]] == key {
				return false
			}
		}
	}
}

// get returns the id of the token whose raw bytes are key, and whether there is one.
func (v *vocabTable) get(key string) (uint32, bool) {
	h := hashBytes(key)
	tag := h >> 32 << 32
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		e := v.slots[i]
		if e == 0 {
			return 0, false
		}
		if e&^0xFFFFFFFF == tag {
			id := uint32(e) - 1
			if v.arena[v.spans[2*id]:v.spans[2*id+1]] == key {
				return id, true
			}
		}
	}
}

// getBytes is get for a byte slice key, without allocating.
func (v *vocabTable) getBytes(key []byte) (uint32, bool) {
	h := hashBytes(key)
	tag := h >> 32 << 32
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		e := v.slots[i]
		if e == 0 {
			return 0, false
		}
		if e&^0xFFFFFFFF == tag {
			id := uint32(e) - 1
			if v.arena[v.spans[2*id]:v.spans[2*id+1]] == string(key) {
				return id, true
			}
		}
	}
}
