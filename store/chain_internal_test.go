package store

import (
	"errors"
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
