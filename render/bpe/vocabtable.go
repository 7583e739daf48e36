package bpe

import (
	"math/bits"
)

// vocabTable maps the raw bytes of a vocab token to its id. It is an open-addressing hash table
// built once at load: each 16-byte slot holds the key's first 8 bytes, its length, 24 bits of its
// hash and the id, so a lookup of a token of up to 8 bytes (most of them) touches one slot and
// nothing else; longer keys compare their tail in the tokenizer's arena. No per-entry allocation,
// about a third of the memory of a Go map.
type vocabTable struct {
	slots []vocabSlot
	mask  uint64
	arena string
	spans []uint32 // start and end of id i in arena at 2i, 2i+1
}

type vocabSlot struct {
	head uint64 // the key's first 8 bytes, little endian, zero padded
	meta uint64 // hash<<40 | min(len, 255)<<32 | id+1; 0 marks an empty slot
}

func newVocabTable(n int, arena string, spans []uint32) *vocabTable {
	size := uint64(16)
	for size < uint64(n)*2 {
		size <<= 1
	}
	return &vocabTable{slots: make([]vocabSlot, size), mask: size - 1, arena: arena, spans: spans}
}

// hashKey returns a hash of s (wyhash-style mixing) and its first 8 bytes, little endian.
func hashKey[S ~string | ~[]byte](s S) (hash, head uint64) {
	const (
		m1 = 0xa0761d6478bd642f
		m2 = 0xe7037ed1a0b428db
	)
	h := uint64(len(s)) * m1
	first := true
	for len(s) >= 8 {
		v := uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
			uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
		if first {
			head, first = v, false
		}
		hi, lo := bits.Mul64(v^m2, h^m1)
		h = hi ^ lo
		s = s[8:]
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		v |= uint64(s[i]) << (8 * i)
	}
	if first {
		head = v
	}
	hi, lo := bits.Mul64(v^m2, h^m1)
	return hi ^ lo ^ h, head
}

// hashBytes is hashKey's hash alone.
func hashBytes[S ~string | ~[]byte](s S) uint64 {
	h, _ := hashKey(s)
	return h
}

func slotMeta(hash uint64, n int) uint64 {
	return hash>>40<<40 | uint64(min(n, 255))<<32
}

// put adds the token of id (arena[spans[2id]:spans[2id+1]]) and reports whether its bytes were new.
func (v *vocabTable) put(id uint32) bool {
	key := v.arena[v.spans[2*id]:v.spans[2*id+1]]
	if _, dup := v.get(key); dup {
		return false
	}
	h, head := hashKey(key)
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		if v.slots[i].meta == 0 {
			v.slots[i] = vocabSlot{head: head, meta: slotMeta(h, len(key)) | uint64(id+1)}
			return true
		}
	}
}

// get returns the id of the token whose raw bytes are key, and whether there is one.
func (v *vocabTable) get(key string) (uint32, bool) {
	h, head := hashKey(key)
	want := slotMeta(h, len(key))
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		s := &v.slots[i]
		if s.meta == 0 {
			return 0, false
		}
		if s.meta&^0xFFFFFFFF == want && s.head == head {
			id := uint32(s.meta) - 1
			if len(key) <= 8 || v.arena[v.spans[2*id]+8:v.spans[2*id+1]] == key[8:] {
				return id, true
			}
		}
	}
}

// getBytes is get for a byte slice key, without allocating.
func (v *vocabTable) getBytes(key []byte) (uint32, bool) {
	h, head := hashKey(key)
	want := slotMeta(h, len(key))
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		s := &v.slots[i]
		if s.meta == 0 {
			return 0, false
		}
		if s.meta&^0xFFFFFFFF == want && s.head == head {
			id := uint32(s.meta) - 1
			if len(key) <= 8 || v.arena[v.spans[2*id]+8:v.spans[2*id+1]] == string(key[8:]) {
				return id, true
			}
		}
	}
}
