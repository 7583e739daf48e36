package render

import (
	"math/rand/v2"
	"slices"
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
		fillDigests(next, &got, fresh)
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

// TestExtendTextQwen3 is TestExtendQwen3 for ExtendText: every extension gives exactly the
// Rust oracle's ids of the golden prompts.
func TestExtendTextQwen3(t *testing.T) {
	m := qwen3(t)
	cases := loadGolden(t, "qwen3")
	r := rand.New(rand.NewPCG(7, 8))
	tails := []string{"", "<", "<|im_", "think>", "\n", " ", "x", "<|im_end|>", "é", "<think>\n\n</think>\n\n", "ʼ"}
	reusedTokens, total := 0, 0
	for i, c := range cases {
		if c.err != "" {
			continue
		}
		for k := range 3 {
			p := cases[(i+1)%len(cases)].text
			if k < 2 {
				cut := r.IntN(len(c.text) + 1)
				for cut > 0 && cut < len(c.text) && (c.text[cut]&0xC0) == 0x80 {
					cut--
				}
				p = c.text[:cut] + tails[r.IntN(len(tails))]
			}
			got, reuse, fresh := m.ExtendText(m.EncodeWithBoundaries(p), p, c.text)
			if !slices.Equal(got.IDs, c.ids) {
				t.Fatalf("%s: ExtendText from a %d-byte prefix (reuse %+v) differs from the oracle", c.name, len(p), reuse)
			}
			reusedTokens += reuse.Tokens
			total += len(c.ids)
			if i%8 == 0 {
				FillDigests(c.text, &got, fresh)
				if want := m.EncodeWithBoundaries(c.text); !slices.Equal(want.Boundaries, got.Boundaries) {
					t.Fatalf("%s: ExtendText boundaries differ from EncodeWithBoundaries", c.name)
				}
			}
		}
	}
	t.Logf("reused %d of %d tokens", reusedTokens, total)
}

func FuzzExtendText(f *testing.F) {
	for _, s := range [][2]string{
		{"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n"},
		{"a<<|im_end|>", "a<think>b"},
		{"<|im_start|>system\n\n\n<|im_end|>", "<|im_start|>system\n\n\n \n<|im_end|>x"},
		{"é<think>", "é<think>\u0301"},
		{"", "<|endoftext|>"},
	} {
		f.Add(s[0], s[1])
	}
	m := qwen3(f)
	f.Fuzz(func(t *testing.T, p, next string) {
		got, reuse, fresh := m.ExtendText(m.EncodeWithBoundaries(p), p, next)
		want := m.EncodeWithBoundaries(next)
		if !slices.Equal(got.IDs, want.IDs) {
			t.Fatalf("ExtendText(%q → %q) reuse %+v: ids differ from Encode", p, next, reuse)
		}
		FillDigests(next, &got, fresh)
		if !slices.Equal(got.Boundaries, want.Boundaries) {
			t.Fatalf("ExtendText(%q → %q): boundaries differ", p, next)
		}
	})
}
