package render

import (
	"crypto/sha256"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/stitchllm/stitch/internal/prefix"
)

func (f *fakeEncoder) maxAdded() int {
	n := 0
	for _, a := range f.added {
		n = max(n, len(a))
	}
	return n
}

// TestExtendTextMatchesFullEncode: extending with the previous text at hand gives the full
// encoding's ids and, once the fresh digests are filled in, its exact boundary table.
func TestExtendTextMatchesFullEncode(t *testing.T) {
	scratch := new([]uint32) // reused by every call, as Renderer's pool does
	t.Parallel()
	enc := newFakeEncoder()
	r := rand.New(rand.NewPCG(5, 6))
	reused := 0
	for i := range 5000 {
		base := randomText(r, r.IntN(30))
		p := base + randomText(r, r.IntN(10))
		next := base + randomText(r, r.IntN(12))
		if i%3 == 0 {
			next = p + randomText(r, r.IntN(12))
		}
		prev := encodeWithBoundaries(enc, p)
		// Half the time with the true common prefix as known (what a render memo reports), or a
		// lower bound of it.
		known := 0
		if i%2 == 1 {
			known = prefix.Len(p, next) - r.IntN(3)
		}
		got, reuse, fresh := extendText(enc, enc.maxAdded(), prev, p, next, known, scratch)
		if diff := cmp.Diff(enc.encodeAll(next), got.IDs, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("extendText(%q → %q) reuse %+v ids differ (-want +got):\n%s", p, next, reuse, diff)
		}
		if d := fillDigests(next, &got, fresh); d != textDigest(next) {
			t.Fatalf("fillDigests returned %x, want the digest of the whole text", d)
		}
		if diff := cmp.Diff(encodeWithBoundaries(enc, next).Boundaries, got.Boundaries, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("extendText(%q → %q) boundaries differ (-want +got):\n%s", p, next, diff)
		}
		if reuse.Tokens > 0 {
			reused++
		}
	}
	if reused < 1500 {
		t.Errorf("only %d of 5000 extensions reused tokens; the test does not exercise reuse", reused)
	}
}

func TestExtendTextRejectsBoundaryThatMovesInNext(t *testing.T) {
	scratch := new([]uint32) // reused by every call, as Renderer's pool does
	t.Parallel()
	enc := newFakeEncoder()
	for _, c := range []struct{ p, next string }{
		{"a<<|im_end|>", "a<think>b"},               // "<" + "think>" becomes one added token
		{"q<|im_start|>y", "q<|im_start|>xz"},       // the token at 1 grows to "<|im_start|>x"
		{"q<|im_start|>y<think>", "q<|im_start|>x"}, // ends inside the lookahead
	} {
		got, reuse, _ := extendText(enc, enc.maxAdded(), encodeWithBoundaries(enc, c.p), c.p, c.next, 0, scratch)
		if diff := cmp.Diff(enc.encodeAll(c.next), got.IDs, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%q → %q (reuse %+v): ids differ (-want +got):\n%s", c.p, c.next, reuse, diff)
		}
	}
}

// textDigest is the digest contract spelled out: the first DigestSize bytes of SHA-256(text).
func textDigest(text string) (d [DigestSize]byte) {
	sum := sha256.Sum256([]byte(text))
	copy(d[:], sum[:])
	return d
}

// nextTurn picks the turn of n a test conversation continues and the text it continues with:
// mostly the latest turn grown by up to grow words; sometimes a branch from an earlier turn, or
// the turn's end rewritten.
func nextTurn(r *rand.Rand, n int, text func(int) string, grow int) (int, string) {
	from := n - 1
	if r.IntN(4) == 0 {
		from = r.IntN(n)
	}
	prev := text(from)
	next := prev + randomText(r, 1+r.IntN(grow))
	if r.IntN(5) == 0 && len(prev) > 0 {
		next = prev[:r.IntN(len(prev))] + randomText(r, 1+r.IntN(grow))
	}
	return from, next
}

// TestExtendTextChainInPlace: a conversation extended turn after turn, with branches from earlier
// turns, gives every turn the full encoding's ids; extensions that keep all of the previous ids
// share its array (no copy), and no extension ever changes an earlier turn's ids.
func TestExtendTextChainInPlace(t *testing.T) {
	scratch := new([]uint32) // reused by every call, as Renderer's pool does
	t.Parallel()
	enc := newFakeEncoder()
	r := rand.New(rand.NewPCG(7, 8))
	type turn struct {
		text string
		enc  Encoding
		ids  []uint32 // a private copy of enc.IDs when it was made
	}
	for range 60 {
		first := randomText(r, r.IntN(20))
		e, _, _ := extendText(enc, enc.maxAdded(), Encoding{}, "", first, 0, scratch)
		turns := []turn{{first, e, append([]uint32(nil), e.IDs...)}}
		shared := 0
		for range 30 {
			from, next := nextTurn(r, len(turns), func(i int) string { return turns[i].text }, 8)
			p := turns[from]
			got, _, _ := extendText(enc, enc.maxAdded(), p.enc, p.text, next, 0, scratch)
			if diff := cmp.Diff(enc.encodeAll(next), got.IDs, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%q → %q: ids differ (-want +got):\n%s", p.text, next, diff)
			}
			if cap(got.IDs) != len(got.IDs) {
				t.Fatalf("ids returned with room (cap %d, len %d): a caller's append would write into it", cap(got.IDs), len(got.IDs))
			}
			if len(p.enc.IDs) > 0 && len(got.IDs) > 0 && &p.enc.IDs[0] == &got.IDs[0] {
				shared++
				// The same continuation prepared again (a retry) shares the array too.
				again, _, _ := extendText(enc, enc.maxAdded(), p.enc, p.text, next, 0, scratch)
				if !slices.Equal(again.IDs, got.IDs) || &again.IDs[0] != &got.IDs[0] {
					t.Fatalf("%q → %q again: ids %v (shared %v), want %v shared", p.text, next, again.IDs, &again.IDs[0] == &got.IDs[0], got.IDs)
				}
			}
			turns = append(turns, turn{next, got, append([]uint32(nil), got.IDs...)})
			for i, tu := range turns {
				if !slices.Equal(tu.enc.IDs, tu.ids) {
					t.Fatalf("turn %d's ids changed after a later extension", i)
				}
			}
		}
		if shared == 0 {
			t.Fatal("no extension shared its previous ids; the in-place path is not exercised")
		}
	}
}

// TestExtendTextConcurrentBranches: continuations of one encoding made at once all get the
// right ids (one may extend in place, the others copy). Run with -race.
func TestExtendTextConcurrentBranches(t *testing.T) {
	t.Parallel()
	enc := newFakeEncoder()
	r := rand.New(rand.NewPCG(9, 10))
	base := randomText(r, 20)
	prev, _, _ := extendText(enc, enc.maxAdded(), Encoding{}, "", base, 0, new([]uint32))
	nexts := make([]string, 8)
	for i := range nexts {
		nexts[i] = base + randomText(r, 1+r.IntN(10))
	}
	var wg sync.WaitGroup
	got := make([]Encoding, len(nexts))
	for i, next := range nexts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i], _, _ = extendText(enc, enc.maxAdded(), prev, base, next, 0, new([]uint32)) // one scratch per goroutine, as the pool gives
		}()
	}
	wg.Wait()
	for i, next := range nexts {
		if diff := cmp.Diff(enc.encodeAll(next), got[i].IDs, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("branch %d: ids differ (-want +got):\n%s", i, diff)
		}
	}
	if diff := cmp.Diff(enc.encodeAll(base), prev.IDs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the shared encoding changed (-want +got):\n%s", diff)
	}
}

// TestFillDigestsResumesHashState: a conversation extended turn after turn (with branches and
// rewritten ends), each turn's digests filled as a commit fills them, gets the boundary digests
// and text digest a from-scratch encoding has, while most turns hash from the state kept at the
// reused boundary rather than from the start.
func TestFillDigestsResumesHashState(t *testing.T) {
	t.Parallel()
	scratch := new([]uint32)
	enc := newFakeEncoder()
	r := rand.New(rand.NewPCG(9, 10))
	type turn struct {
		text string
		enc  Encoding
	}
	resumed, fills := 0, 0
	for range 40 {
		first := randomText(r, 5+r.IntN(20))
		e, _, fresh := extendText(enc, enc.maxAdded(), Encoding{}, "", first, 0, scratch)
		fillDigests(first, &e, fresh)
		turns := []turn{{first, e}}
		for range 30 {
			from, next := nextTurn(r, len(turns), func(i int) string { return turns[i].text }, 12)
			p := turns[from]
			got, _, fresh := extendText(enc, enc.maxAdded(), p.enc, p.text, next, 0, scratch)
			if fresh > 0 && stateAt(got.states, fresh-1) != nil {
				resumed++
			}
			fills++
			total := fillDigests(next, &got, fresh)
			want := encodeWithBoundaries(enc, next)
			if total != textDigest(next) {
				t.Fatalf("%q → %q: text digest differs", p.text, next)
			}
			if diff := cmp.Diff(want.Boundaries, got.Boundaries, cmpopts.EquateEmpty()); diff != "" {
				t.Fatalf("%q → %q: boundaries differ (-want +got):\n%s", p.text, next, diff)
			}
			turns = append(turns, turn{next, got})
		}
	}
	if resumed*2 < fills {
		t.Fatalf("%d of %d fills resumed a hash state: the resumed path is not exercised", resumed, fills)
	}
	t.Logf("%d of %d fills resumed a hash state", resumed, fills)
}

// BenchmarkFillDigests fills a commit's digests for a ~400 KB prompt (a 100k-token conversation)
// whose last ~10 KB are new: from the start of the text, as before hash states were kept, and
// from the state kept at the reused boundary.
func BenchmarkFillDigests(b *testing.B) {
	enc := newFakeEncoder()
	r := rand.New(rand.NewPCG(11, 12))
	prevText := randomText(r, 40000)
	prev, _, fresh := extendText(enc, enc.maxAdded(), Encoding{}, "", prevText, 0, new([]uint32))
	fillDigests(prevText, &prev, fresh)
	next := prevText + randomText(r, 1000)
	got, _, fresh := extendText(enc, enc.maxAdded(), prev, prevText, next, 0, new([]uint32))
	if stateAt(got.states, fresh-1) == nil {
		b.Fatal("no hash state at the reused boundary")
	}
	for _, resume := range []bool{false, true} {
		b.Run(fmt.Sprintf("resume=%v", resume), func(b *testing.B) {
			b.SetBytes(int64(len(next)))
			for b.Loop() {
				e := got
				if !resume {
					e.states = nil
				}
				fillDigests(next, &e, fresh)
			}
		})
	}
}
