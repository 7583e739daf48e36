package render

import (
	"crypto/sha256"
	"math/rand/v2"
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
		got, reuse, fresh := extendText(enc, enc.maxAdded(), prev, p, next, known)
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
	t.Parallel()
	enc := newFakeEncoder()
	for _, c := range []struct{ p, next string }{
		{"a<<|im_end|>", "a<think>b"},               // "<" + "think>" becomes one added token
		{"q<|im_start|>y", "q<|im_start|>xz"},       // the token at 1 grows to "<|im_start|>x"
		{"q<|im_start|>y<think>", "q<|im_start|>x"}, // ends inside the lookahead
	} {
		got, reuse, _ := extendText(enc, enc.maxAdded(), encodeWithBoundaries(enc, c.p), c.p, c.next, 0)
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
