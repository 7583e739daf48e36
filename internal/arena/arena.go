// Package arena holds append-only buffers shared by a chain of slices, each a prefix of the
// next: one conversation's prompt ids, or their JSON, turn after turn (issue 20). A continuation
// that keeps all of the previous slice writes what it adds into the room after it instead of
// copying the history. buf[:used] is never written again, so every earlier slice stays valid; a
// continuation shares the buffer when the elements already written after its previous slice
// agree with its own (none yet, or the same turn prepared again), and a branch that differs, or
// one that does not fit, copies.
//
// A copy's first elements are the source's, which never change: the source remembers its last
// copy, so that the same continuation joined again (a retried turn, a re-preparation) shares
// that copy instead of copying the history once more, after comparing only its tail.
package arena

import (
	"bytes"
	"slices"
	"sync"
	"unsafe"
	"weak"
)

// Arena is the backing array of such a chain. Its zero value is not used: Join makes one.
type Arena[T comparable] struct {
	mu   sync.Mutex
	buf  []T // the whole backing array (len == cap)
	used int // buf[:used] holds elements some slice uses
	// copied is the arena Join last copied buf[:copiedKeep] into (as that arena's first
	// elements); weak, so that a copy nobody uses any more is not kept alive by its source.
	copied     weak.Pointer[Arena[T]]
	copiedKeep int
}

// Join returns prev[:keep] followed by tail, and the arena it lives in. prev is a slice Join
// returned with a (or any slice, with a nil). tail may begin with the elements prev already has
// after keep: an agent turn whose boundary falls before the previous prompt's last ids. A copy
// gets room for later turns: at least minRoom elements, and a quarter of its length. The slice's
// capacity is its length, so that an append by any caller copies instead of writing into the
// room. When a copied prev[:keep] before (the same continuation joined again), it shares that
// copy if the copy's elements after keep agree with tail (compared, as ever, only over tail).
func Join[T comparable](a *Arena[T], prev []T, keep int, tail []T, minRoom int) ([]T, *Arena[T]) {
	if s, c, ok := Extend(a, prev, keep, tail); ok {
		return s, c
	}
	n := keep + len(tail)
	// Grown from the kept elements themselves: growslice copies them without zeroing them first
	// and zeroes only the part grown (the tail's and the room); make and copy would zero the
	// whole array first when its memory is reused.
	buf := slices.Grow(prev[:keep:keep], len(tail)+max(minRoom, n/4))
	buf = append(buf, tail...)
	c := &Arena[T]{buf: buf[:cap(buf)], used: n}
	if a != nil && keep > 0 {
		a.noteCopy(prev, keep, c)
	}
	return buf[:n:n], c
}

// Extend is Join without its copy: it returns prev[:keep] followed by tail, and the arena it
// lives in, when that shares an array (a's room after prev, or the copy of prev[:keep] Join made
// before), and false otherwise. A caller that would rather not copy the history now (a turn
// being prepared, which Join may copy when it completes) tries it first.
func Extend[T comparable](a *Arena[T], prev []T, keep int, tail []T) ([]T, *Arena[T], bool) {
	if a == nil {
		return nil, nil, false
	}
	if k := len(prev) - keep; k >= 0 && k <= len(tail) && equal(tail[:k], prev[keep:]) {
		if s, ok := a.extend(prev, tail[k:]); ok {
			return s, a, true
		}
	}
	if c := a.copyOf(prev, keep); c != nil {
		if s, ok := c.extend(c.buf[:keep], tail); ok {
			return s, c, true
		}
	}
	return nil, nil, false
}

// copyOf returns the arena a copy of prev[:keep] was last made into, when prev lives in a (so
// that its first keep elements are a's, which never change) and that copy began with at least
// keep of them; nil otherwise.
func (a *Arena[T]) copyOf(prev []T, keep int) *Arena[T] {
	if keep == 0 || unsafe.SliceData(a.buf) != unsafe.SliceData(prev) {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if keep > a.copiedKeep || keep > a.used {
		return nil
	}
	return a.copied.Value()
}

// noteCopy records that c begins with a copy of prev[:keep], when prev lives in a.
func (a *Arena[T]) noteCopy(prev []T, keep int, c *Arena[T]) {
	if unsafe.SliceData(a.buf) != unsafe.SliceData(prev) {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if keep <= a.used {
		a.copied, a.copiedKeep = weak.Make(c), keep
	}
}

// Room is the least room to give a copy of n elements: twice its length, at least floor and at
// most most. A short chain's room stays in proportion to it (a cache that holds many short
// conversations holds about three times their elements, not most each), while a long one's
// room is most, plus the quarter of its length Join adds.
func Room(n, floor, most int) int { return min(most, max(2*n, floor)) }

// Cap returns the elements the arena's backing array holds (used or not): what it costs in
// memory, for a cache that accounts what it keeps alive.
func (a *Arena[T]) Cap() int {
	if a == nil {
		return 0
	}
	return len(a.buf) // buf is the whole array, written once
}

// extend returns s followed by more, sharing a's array, when s is a prefix of it and every
// element already written after s agrees with more (a retried or repeated continuation finds
// its own there); the rest of more is written into the room, if it fits.
func (a *Arena[T]) extend(s, more []T) ([]T, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	start, end := len(s), len(s)+len(more)
	if start == 0 || unsafe.SliceData(a.buf) != unsafe.SliceData(s) || a.used < start || end > len(a.buf) {
		return nil, false
	}
	written := min(a.used, end) - start // elements after s already in use: never rewritten
	if !equal(a.buf[start:start+written], more[:written]) {
		return nil, false
	}
	if end > a.used {
		copy(a.buf[a.used:end], more[written:])
		a.used = end
	}
	return a.buf[:end:end], true
}

// equal is slices.Equal, comparing the memory of the element types whose values are their bytes
// (a prompt's JSON and ids) at once: slices.Equal compares element by element, which made a
// repeated turn's check of the JSON it wrote before cost more than encoding it.
func equal[T comparable](a, b []T) bool {
	switch a := any(a).(type) {
	case []byte:
		return bytes.Equal(a, any(b).([]byte))
	case []uint32:
		b := any(b).([]uint32)
		return len(a) == len(b) && bytes.Equal(uint32Bytes(a), uint32Bytes(b))
	}
	return slices.Equal(a, b)
}

func uint32Bytes(s []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(s))), 4*len(s))
}
