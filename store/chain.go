package store

import (
	"bytes"
	"fmt"
	"unsafe"
)

// Artifact chains (docs/design.md "Storage tiers"). A turn's artifact is
// stored as a link: the ids it added to the artifact it extends (its base,
// usually the previous turn's), the count of ids and boundaries it reuses from
// it, and a binding to that base's content (ids length, prompt text digest).
// A full snapshot has no base. Tiered bounds a chain: a turn whose base
// already has MaxChain links below it, or whose base would expire before half
// the new artifact's lifetime, is written as a snapshot, and the links of the
// chain it ends are re-based on that snapshot (each rewritten as the few ids it
// does not share with it), so that per conversation the tiers hold about one
// full history plus what each turn added, whatever the branches.

// maxWalk bounds the links read for one artifact: chains are written at most
// MaxChain deep, but re-based links of old turns may sit a few snapshots back.
const maxWalk = 64

// walkUp reassembles the artifacts of links (links[0] the one asked for, each
// the base of the one before, the last a full snapshot) from the snapshot up.
// It checks each link against its base and calls visit, when not nil, with
// each link and its ids (PromptIDs ++ GeneratedIDs) and boundaries, which are
// only valid during the call. It returns the ids and boundaries of links[0].
func walkUp(links []*link, visit func(l *link, ids []uint32, bounds []Boundary) error) ([]uint32, []Boundary, error) {
	size, nb := 0, 0 // no link's ids (boundaries) are more than all links' own together
	for _, l := range links {
		size += l.ownKnown.len() + len(l.own)
		nb += len(l.ownBounds)
	}
	ids := make([]uint32, 0, size)
	bounds := make([]Boundary, 0, nb)
	for i := len(links) - 1; i >= 0; i-- {
		l := links[i]
		if i == len(links)-1 {
			if l.base != "" {
				return nil, nil, fmt.Errorf("link %q has an unread base: %w", truncate(l.a.ResponseID), ErrInvalid)
			}
		} else if below := links[i+1]; l.base != below.a.ResponseID || l.baseLen != len(ids) ||
			l.baseDigest != below.a.PromptTextDigest || l.reuseBounds > len(bounds) {
			return nil, nil, fmt.Errorf("link %q does not match its base %q: %w", truncate(l.a.ResponseID), truncate(l.base), ErrInvalid)
		}
		ids = append(append(append(ids[:l.reuseIDs], l.ownKnown.a...), l.ownKnown.b...), l.own...)
		bounds = append(bounds[:l.reuseBounds], l.ownBounds...)
		if visit != nil {
			if err := visit(l, ids, bounds); err != nil {
				return nil, nil, err
			}
		}
	}
	return ids, bounds, nil
}

// reconstruct returns the artifact of links[0] (see walkUp), with Chain set
// and ExpiresAt the earliest along the chain.
func reconstruct(links []*link) (*Artifact, error) {
	ids, bounds, err := walkUp(links, nil)
	if err != nil {
		return nil, err
	}
	head := links[0]
	a := *head.a
	a.PromptIDs = ids[:head.promptLen:head.promptLen]
	if len(ids) > head.promptLen {
		a.GeneratedIDs = ids[head.promptLen:]
	}
	if len(bounds) > 0 {
		a.Boundaries = bounds
	}
	for _, l := range links[1:] {
		a.Chain = append(a.Chain, l.a.ResponseID)
		if l.a.ExpiresAt.Before(a.ExpiresAt) {
			a.ExpiresAt = l.a.ExpiresAt
		}
	}
	if err := a.validate(); err != nil {
		return nil, fmt.Errorf("reassemble artifact %q: %v: %w", truncate(a.ResponseID), err, ErrInvalid)
	}
	return &a, nil
}

// commonIDs returns the length of the common prefix of a1 ++ a2 and b1 ++ b2.
func commonIDs(a1, a2, b1, b2 []uint32) int {
	n := 0
	for {
		if len(a1) == 0 {
			a1, a2 = a2, nil
		}
		if len(b1) == 0 {
			b1, b2 = b2, nil
		}
		m := min(len(a1), len(b1))
		if m == 0 {
			return n
		}
		k := commonPrefix(a1[:m], b1[:m])
		n += k
		if k < m {
			return n
		}
		a1, b1 = a1[m:], b1[m:]
	}
}

// commonPrefix returns the length of the common prefix of a and b (len(b) >= len(a)). A turn's
// ids usually share the backing array of its base's (render's arena: the prompt continues the
// previous one in place), which needs no compare at all; otherwise blocks are compared as bytes
// (memequal) and only the block that differs element by element, so that writing a turn costs
// about its own ids rather than a loop over the whole history.
func commonPrefix(a, b []uint32) int {
	b = b[:len(a)]
	if len(a) == 0 || unsafe.SliceData(a) == unsafe.SliceData(b) {
		return len(a)
	}
	const block = 1024
	i := 0
	for ; i+block <= len(a); i += block {
		if !bytes.Equal(idBytes(a[i:i+block]), idBytes(b[i:i+block])) {
			break
		}
	}
	for ; i < len(a); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	return len(a)
}

// idBytes views ids as their bytes, for memequal.
func idBytes(ids []uint32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(ids))), 4*len(ids))
}

// commonBounds returns the length of the common prefix of two boundary tables.
func commonBounds(a, b []Boundary) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

// linkOn is the link storing a as what it adds to base: nil when that would
// not save at least half of a's ids (a snapshot is better).
func linkOn(a, base *Artifact) *link {
	n := sharedHint(a, base)
	a1, a2 := idsFrom(a.PromptIDs, a.GeneratedIDs, n)
	b1, b2 := idsFrom(base.PromptIDs, base.GeneratedIDs, n)
	k := n + commonIDs(a1, a2, b1, b2)
	if 2*k < len(a.PromptIDs)+len(a.GeneratedIDs) || k == 0 {
		return nil
	}
	return &link{a: a, base: base.ResponseID, baseLen: len(base.PromptIDs) + len(base.GeneratedIDs),
		baseDigest: base.PromptTextDigest, reuseIDs: k, reuseBounds: commonBounds(a.Boundaries, base.Boundaries),
		promptLen: len(a.PromptIDs)}
}

// sharedHint is a.SharedIDs, the ids a's producer copied from base's, within
// both artifacts' ids, or 0 when a spot check finds it wrong: the first, the
// middle and the last of those ids must equal base's.
func sharedHint(a, base *Artifact) int {
	n := min(max(a.SharedIDs, 0), len(a.PromptIDs)+len(a.GeneratedIDs), len(base.PromptIDs)+len(base.GeneratedIDs))
	for _, i := range [...]int{0, n / 2, n - 1} {
		if n > 0 && idAt(a, i) != idAt(base, i) {
			return 0
		}
	}
	return n
}

// idAt is (a.PromptIDs ++ a.GeneratedIDs)[i].
func idAt(a *Artifact, i int) uint32 {
	if i < len(a.PromptIDs) {
		return a.PromptIDs[i]
	}
	return a.GeneratedIDs[i-len(a.PromptIDs)]
}

// sharedIDs carries, up a walkUp, how many ids and boundaries the artifact
// being reassembled shares with a snapshot from the start, so that each link's
// linkOn costs its own ids: walkUp cuts the ids to the link's reused ones (the
// shared prefix can only shrink to that) and appends its own (compared only
// when everything before them is shared).
type sharedIDs struct{ ids, bounds int }

// linkOn is the package's linkOn(a, snap) for a, the artifact of link l
// reassembled by walkUp, given the previous call's on l's base (none for the
// chain's snapshot).
func (s *sharedIDs) linkOn(a *Artifact, l *link, snap *Artifact) *link {
	if s.ids = min(s.ids, l.reuseIDs); s.ids == l.reuseIDs {
		// a's ids past the reused ones are l's own.
		a1, a2 := idsFrom(a.PromptIDs, a.GeneratedIDs, s.ids)
		b1, b2 := idsFrom(snap.PromptIDs, snap.GeneratedIDs, s.ids)
		s.ids += commonIDs(a1, a2, b1, b2)
	}
	if s.bounds = min(s.bounds, l.reuseBounds); s.bounds == l.reuseBounds {
		s.bounds += commonBounds(l.ownBounds, snap.Boundaries[min(s.bounds, len(snap.Boundaries)):])
	}
	k := s.ids
	if 2*k < len(a.PromptIDs)+len(a.GeneratedIDs) || k == 0 {
		return nil
	}
	return &link{a: a, base: snap.ResponseID, baseLen: len(snap.PromptIDs) + len(snap.GeneratedIDs),
		baseDigest: snap.PromptTextDigest, reuseIDs: k, reuseBounds: s.bounds, promptLen: len(a.PromptIDs)}
}

// idsFrom is (p ++ g)[i:] as two slices.
func idsFrom(p, g []uint32, i int) ([]uint32, []uint32) {
	if i <= len(p) {
		return p[i:], g
	}
	return nil, g[min(i-len(p), len(g)):]
}

// chainOf is the Chain of an artifact stored on base.
func chainOf(base *Artifact) []string {
	return append([]string{base.ResponseID}, base.Chain...)
}
