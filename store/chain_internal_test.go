package store

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"
)

// newInternalTiered is an L1-only Tiered on a fixed clock.
func newInternalTiered(t *testing.T) (*Tiered, *Sealer) {
	t.Helper()
	s := mustSealer(t, key1)
	l1, err := NewL1(L1Options{MaxMB: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l1.Close() })
	return NewTiered(TieredOptions{Sealer: s, L1: l1, Now: func() time.Time { return testNow }}), s
}

// TestChainForgedLinks: a link names its base by response id, looked up in its
// own tenant's keys only, and bound to that base's content: a link naming
// another tenant's artifact reads as a missing link, and one whose base is
// not the content it was cut from reads as invalid.
func TestChainForgedLinks(t *testing.T) {
	tr, s := newInternalTiered(t)
	base := testArtifact(200)
	base.Tenant, base.ResponseID = "acme", "resp_base"
	if err := tr.Put(t.Context(), base); err != nil {
		t.Fatal(err)
	}
	child := testArtifact(300)
	child.Tenant, child.ResponseID = "evil", "resp_child"
	copy(child.PromptIDs, base.PromptIDs)
	forged := &link{base: "resp_base", baseLen: len(base.PromptIDs) + len(base.GeneratedIDs), baseDigest: base.PromptTextDigest,
		reuseIDs: 200, promptLen: len(child.PromptIDs)}
	sealed, err := s.sealLink(child, forged)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.l1.Set("evil", "resp_child", sealed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Get(t.Context(), "evil", "resp_child"); !errors.Is(err, ErrNotFound) {
		t.Errorf("a link naming another tenant's artifact: %v, want ErrNotFound", err)
	}
	// evil's own resp_base, with other content: the binding does not match.
	decoy := testArtifact(250)
	decoy.Tenant, decoy.ResponseID = "evil", "resp_base"
	if err := tr.Put(t.Context(), decoy); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Get(t.Context(), "evil", "resp_child"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a link on a base with other content: %v, want ErrInvalid", err)
	}
	// The same bytes under acme: the MAC binds them to evil.
	if err := tr.l1.Set("acme", "resp_child", sealed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Get(t.Context(), "acme", "resp_child"); !errors.Is(err, ErrInvalid) {
		t.Errorf("evil's link read as acme's: %v, want ErrInvalid", err)
	}
	// A link looping back to itself.
	loop := &link{base: "resp_loop", baseLen: 10, reuseIDs: 0, promptLen: len(child.PromptIDs)}
	child.Tenant, child.ResponseID = "acme", "resp_loop"
	if sealed, err = s.sealLink(child, loop); err != nil {
		t.Fatal(err)
	}
	if err := tr.l1.Set("acme", "resp_loop", sealed); err != nil {
		t.Fatal(err)
	}
	if _, _, err := tr.Get(t.Context(), "acme", "resp_loop"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a looping chain: %v, want ErrInvalid", err)
	}
}

// TestChainVersion1Entry: an entry an earlier release wrote (version 1, one
// full artifact) reads through Tiered and is a parent like any snapshot.
func TestChainVersion1Entry(t *testing.T) {
	tr, s := newInternalTiered(t)
	old := testArtifact(400)
	sealed, err := s.Seal(old.Tenant, artifactPurpose, appendV1Payload(old), old.ExpiresAt)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.l1.Set(old.Tenant, old.ResponseID, sealed); err != nil {
		t.Fatal(err)
	}
	got, _, err := tr.Get(t.Context(), old.Tenant, old.ResponseID)
	if err != nil {
		t.Fatalf("a version-1 entry: %v", err)
	}
	child := testArtifact(420)
	child.ResponseID = "resp_next"
	copy(child.PromptIDs, append(append([]uint32(nil), got.PromptIDs...), got.GeneratedIDs...))
	if err := tr.PutChild(t.Context(), child, got); err != nil {
		t.Fatal(err)
	}
	if len(child.Chain) != 1 {
		t.Fatalf("child of a version-1 entry: chain %v, want a link on it", child.Chain)
	}
	back, _, err := tr.Get(t.Context(), child.Tenant, child.ResponseID)
	if err != nil {
		t.Fatal(err)
	}
	if !equalIDs(back.PromptIDs, child.PromptIDs) || !equalIDs(back.GeneratedIDs, child.GeneratedIDs) {
		t.Errorf("child of a version-1 entry reads back other ids")
	}
}

func equalIDs(a, b []uint32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCommonPrefixBlocks: the block-wise compare finds the first difference wherever it falls
// (first element, inside or at the edge of a block, in the tail after the last whole block), and
// a slice sharing its backing array with the other is its whole length.
func TestCommonPrefixBlocks(t *testing.T) {
	base := make([]uint32, 5000)
	for i := range base {
		base[i] = uint32(i*7 + 1)
	}
	naive := func(a, b []uint32) int {
		for i := range a {
			if a[i] != b[i] {
				return i
			}
		}
		return len(a)
	}
	for _, n := range []int{0, 1, 1023, 1024, 1025, 4096, 5000} {
		for _, diff := range []int{-1, 0, 1, 511, 1023, 1024, 1025, 2047, 4095, 4096, 4999} {
			if diff >= n {
				continue
			}
			a := append([]uint32(nil), base[:n]...)
			b := append([]uint32(nil), base...)
			if diff >= 0 {
				b[diff]++
			}
			if got, want := commonPrefix(a, b), naive(a, b); got != want {
				t.Errorf("n %d, differing at %d: commonPrefix = %d, want %d", n, diff, got, want)
			}
		}
	}
	if got := commonPrefix(base[:3000], base); got != 3000 {
		t.Errorf("shared backing: commonPrefix = %d, want 3000", got)
	}
}

// TestLinkOnSharedHint: a producer's SharedIDs within what a and its base share gives the link a
// full compare gives; one past it that the spot checks catch, or out of range, is not used. (A
// wrong hint the spot checks miss is stored as given: producers set it only for ids they copied.)
func TestLinkOnSharedHint(t *testing.T) {
	ids := make([]uint32, 6000)
	for i := range ids {
		ids[i] = uint32(i*7 + 1)
	}
	base := &Artifact{ResponseID: "resp_base", PromptIDs: ids[:4000:4000], GeneratedIDs: ids[4000:4300:4300]}
	edited := append([]uint32(nil), ids[:5000]...)
	edited[3000]++ // a re-render that changed the previous prompt from id 3000 on
	editedMid := append([]uint32(nil), ids[:5000]...)
	editedMid[2150]++ // at the middle of the base's ids
	for _, tc := range []struct {
		name   string
		prompt []uint32
		hint   int
		want   int // the link's reused ids
	}{
		{"no hint", ids[:5000], 0, 4300},
		{"exact hint", ids[:5000], 4300, 4300},
		{"hint below", ids[:5000], 1234, 4300},
		{"hint past the base", ids[:5000], 4301, 4300},
		{"hint past both", ids[:5000], 1 << 30, 4300},
		{"negative hint", ids[:5000], -5, 4300},
		{"edited, hint within", edited, 2999, 3000},
		{"edited, hint past the edit (last id differs)", edited, 3001, 3000},
		{"edited, hint far past the edit (middle id differs)", editedMid[:4300], 6000, 2150},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Artifact{ResponseID: "resp_a", PromptIDs: tc.prompt, SharedIDs: tc.hint}
			l := linkOn(a, base)
			if l == nil || l.reuseIDs != tc.want {
				t.Fatalf("linkOn = %+v, want %d reused ids", l, tc.want)
			}
		})
	}
}

// TestRebaseEditedChains: conversations whose turns keep only part of the turn before (a
// canonical re-render that changes the previous prompt's tail), branch from random earlier turns
// and continue from what Get returns as often as from what PutChild left, so that re-basings
// meet snapshots the links above kept in full, in part or barely. Every turn reads back as it was
// put after every write, and at every re-basing the links written (sharedIDs.linkOn, the old
// snapshot's kept ids taken from the parent) are what linkOn on the whole ids gives.
func TestRebaseEditedChains(t *testing.T) {
	for seed := range uint64(6) {
		r := rand.New(rand.NewPCG(seed, 99))
		l1, err := NewL1(L1Options{MaxMB: 32})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l1.Close() })
		tr := NewTiered(TieredOptions{Sealer: mustSealer(t, key1), L1: l1, Now: fixedNow, MaxChain: 1 + int(seed%4)})
		var put []*Artifact
		for turn := range 40 {
			var parent *Artifact
			if turn > 0 {
				parent = put[len(put)-1]
				if r.IntN(4) == 0 {
					parent = put[r.IntN(len(put))] // a branch
				}
				if r.IntN(2) == 0 {
					got, _, err := tr.Get(t.Context(), "acme", parent.ResponseID)
					if err != nil {
						t.Fatalf("seed %d turn %d: get parent: %v", seed, turn, err)
					}
					parent = got
				}
			}
			a := editedTurn(r, fmt.Sprintf("resp_%d_%02d", seed, turn), parent)
			if parent != nil && len(parent.Chain) >= tr.maxChain {
				checkRebaseLinks(t, tr, a, parent)
			}
			if err := tr.PutChild(t.Context(), a, parent); err != nil {
				t.Fatalf("seed %d turn %d: %v", seed, turn, err)
			}
			put = append(put, a) // as PutChild left it, as the hot cache holds it (its Chain may go stale)
			for i, w := range put {
				got, _, err := tr.Get(t.Context(), "acme", w.ResponseID)
				if err != nil {
					t.Fatalf("seed %d after turn %d: turn %d: %v", seed, turn, i, err)
				}
				if !slices.Equal(got.PromptIDs, w.PromptIDs) || !slices.Equal(got.GeneratedIDs, w.GeneratedIDs) || !slices.Equal(got.Boundaries, w.Boundaries) {
					t.Fatalf("seed %d after turn %d: turn %d reads back different ids or boundaries", seed, turn, i)
				}
			}
		}
		if tr.Stats().Rebased == 0 {
			t.Errorf("seed %d: nothing re-based", seed)
		}
	}
}

// editedTurn is the turn after parent (nil: the first): parent's ids cut at a random point past
// their middle (a re-rendered tail), then new ids, with the boundaries before the cut kept.
func editedTurn(r *rand.Rand, id string, parent *Artifact) *Artifact {
	a := &Artifact{Tenant: "acme", ResponseID: id, Fingerprint: [32]byte{7}, Mode: ModeCanonical, PromptTextDigest: TextDigest(id)}
	if parent != nil {
		ids := append(slices.Clone(parent.PromptIDs), parent.GeneratedIDs...)
		keep := len(ids) - r.IntN(len(ids)/8+1)
		if r.IntN(3) == 0 {
			keep = len(ids) // append-only, as exact mode and most canonical turns
		}
		a.PromptIDs = ids[:keep]
		for _, b := range parent.Boundaries {
			if b.TokenIndex <= keep {
				a.Boundaries = append(a.Boundaries, b)
			}
		}
	}
	for range 20 + r.IntN(300) {
		if r.IntN(40) == 0 {
			n := len(a.PromptIDs)
			a.Boundaries = append(a.Boundaries, Boundary{TextOffset: 4 * n, TokenIndex: n, PrefixDigest: TextDigest(fmt.Sprint(id, n))})
		}
		a.PromptIDs = append(a.PromptIDs, r.Uint32N(151_000))
	}
	a.PromptTextLen = 4 * len(a.PromptIDs)
	for range 1 + r.IntN(60) {
		a.GeneratedIDs = append(a.GeneratedIDs, r.Uint32N(151_000))
	}
	a.ItemBounds = []ItemBound{{0, len(a.GeneratedIDs)}}
	return a
}

// checkRebaseLinks walks parent's chain as rebase does, its snapshot's kept ids taken from
// parent, and compares each link it would write on a (the coming snapshot) with linkOn's.
func checkRebaseLinks(t *testing.T, tr *Tiered, a, parent *Artifact) {
	t.Helper()
	snap := *a
	snap.Chain = nil
	links, _, err := tr.links(t.Context(), "acme", parent.ResponseID, parent)
	if err != nil {
		t.Fatalf("links of %s: %v", parent.ResponseID, err)
	}
	var shared sharedIDs
	ids, _, err := walkUp(links, func(l *link, ids []uint32, bounds []Boundary) error {
		cur := *l.a
		cur.PromptIDs, cur.GeneratedIDs, cur.Boundaries = ids[:l.promptLen:l.promptLen], ids[l.promptLen:], bounds
		got, want := shared.linkOn(&cur, l, &snap), linkOn(&cur, &snap)
		if (got == nil) != (want == nil) || got != nil && (got.reuseIDs != want.reuseIDs || got.reuseBounds != want.reuseBounds ||
			got.base != want.base || got.baseLen != want.baseLen || got.promptLen != want.promptLen) {
			t.Fatalf("link %s on %s: sharedIDs %+v, linkOn %+v", cur.ResponseID, snap.ResponseID, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, append(slices.Clone(parent.PromptIDs), parent.GeneratedIDs...)) {
		t.Fatalf("chain of %s does not reassemble its ids", parent.ResponseID)
	}
}

// memPortable is an L2 tier in a map, for tests that tamper with what it holds.
type memPortable struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (p *memPortable) Get(_ context.Context, tenant, id string) ([]byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.m[localKey(tenant, id)]
	if !ok {
		return nil, ErrNotFound
	}
	return slices.Clone(b), nil
}

func (p *memPortable) Set(_ context.Context, tenant, id string, sealed []byte, _ time.Duration) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[localKey(tenant, id)] = slices.Clone(sealed)
	return nil
}

func (p *memPortable) Delete(_ context.Context, tenant, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.m, localKey(tenant, id))
	return nil
}

// TestRebaseChecksPortableMACs: a re-basing skips the MAC check only for links in L1 (this
// process's own memory); a link read from L2 is checked, and a tampered one stops the re-basing
// before anything is written.
func TestRebaseChecksPortableMACs(t *testing.T) {
	l2 := &memPortable{m: map[string][]byte{}}
	tr := NewTiered(TieredOptions{Sealer: mustSealer(t, key1), L2: l2, Now: fixedNow, MaxChain: 3})
	r := rand.New(rand.NewPCG(5, 5))
	var parent *Artifact
	for turn := range 4 { // a snapshot and three links: the next turn re-bases them
		a := editedTurn(r, fmt.Sprintf("resp_%02d", turn), parent)
		if err := tr.PutChild(t.Context(), a, parent); err != nil {
			t.Fatal(err)
		}
		parent = a
	}
	k := localKey("acme", "resp_01")
	l2.m[k][len(l2.m[k])/2] ^= 1 // a link in the middle of the chain
	tampered := slices.Clone(l2.m[k])
	next := editedTurn(r, "resp_04", parent)
	if err := tr.PutChild(t.Context(), next, parent); err != nil {
		t.Fatal(err)
	}
	if len(next.Chain) != 0 {
		t.Fatalf("turn after a full chain: chain %v, want a snapshot", next.Chain)
	}
	if st := tr.Stats(); st.Rebased != 0 || st.Invalid == 0 {
		t.Errorf("re-basing over a tampered L2 link: %+v, want nothing re-based and an invalid link", st)
	}
	if !slices.Equal(l2.m[k], tampered) {
		t.Errorf("the tampered link was rewritten")
	}
}
