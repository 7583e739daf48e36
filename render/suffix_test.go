package render

import (
	"bytes"
	"crypto/sha256"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fakeEncoder is a context-sensitive toy tokenizer: added tokens matched leftmost-longest on the
// raw text, then greedy longest-match over a small vocabulary inside each segment, bytes as a
// fallback. It exercises the boundary bookkeeping without render/bpe.
type fakeEncoder struct {
	added []string
	vocab []string
}

func newFakeEncoder() *fakeEncoder {
	return &fakeEncoder{
		added: []string{"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<|im_start|>x"},
		vocab: []string{"ab", "abc", "bca", "th", "ink", "<th", "im_", "|>", "\n\n", " a", "aa", "aaa", "é"},
	}
}

func (f *fakeEncoder) addedSpans(text string) []span {
	var out []span
	for i := 0; i < len(text); {
		best := -1
		for k, a := range f.added {
			if strings.HasPrefix(text[i:], a) && (best < 0 || len(a) > len(f.added[best])) {
				best = k
			}
		}
		if best < 0 {
			i++
			continue
		}
		out = append(out, span{Start: i, End: i + len(f.added[best]), ID: uint32(1000 + best)})
		i += len(f.added[best])
	}
	return out
}

// startMark is the id the fake prepends to a non-empty text at offset 0 of the input, as a
// Metaspace "first" tokenizer prepends "▁" there alone.
const startMark = 999

func (f *fakeEncoder) AppendEncode(dst []uint32, text string) []uint32 {
	if text != "" {
		dst = append(dst, startMark)
	}
	return f.AppendEncodeTail(dst, text)
}

func (f *fakeEncoder) AppendEncodeTail(dst []uint32, text string) []uint32 {
	for i := 0; i < len(text); {
		best := -1
		for k, v := range f.vocab {
			if strings.HasPrefix(text[i:], v) && (best < 0 || len(v) > len(f.vocab[best])) {
				best = k
			}
		}
		if best < 0 {
			dst = append(dst, uint32(text[i]))
			i++
			continue
		}
		dst = append(dst, uint32(500+best))
		i += len(f.vocab[best])
	}
	return dst
}

// encodeAll is the reference: the same tokenizer run over the whole text at once.
func (f *fakeEncoder) encodeAll(text string) []uint32 {
	var ids []uint32
	pos := 0
	for _, s := range f.addedSpans(text) {
		ids = encodeAt(f, ids, text[pos:s.Start], pos)
		ids = append(ids, s.ID)
		pos = s.End
	}
	return encodeAt(f, ids, text[pos:], pos)
}

var suffixFragments = []string{
	"<|im_start|>", "<|im_end|>", "<think>", "</think>", "<tool_call>", "<", "think>", "<|im_", "start|>",
	"x", "a", "b", "c", "ab", " ", "\n", "\n\n", "é", "user\n", "assistant\n", "hello", "|>", "<th",
}

func randomText(r *rand.Rand, n int) string {
	var b strings.Builder
	for range n {
		b.WriteString(suffixFragments[r.IntN(len(suffixFragments))])
	}
	return b.String()
}

func TestExtendMatchesFullEncode(t *testing.T) {
	t.Parallel()
	enc := newFakeEncoder()
	r := rand.New(rand.NewPCG(1, 2))
	reused := 0
	for i := range 3000 {
		base := randomText(r, r.IntN(30))
		p := base + randomText(r, r.IntN(10))
		next := base + randomText(r, r.IntN(12))
		if i%5 == 0 {
			next = p + randomText(r, r.IntN(12)) // pure continuation
		}
		prev := encodeWithBoundaries(enc, p)
		got, reuse := extend(enc, prev, next)
		full := encodeWithBoundaries(enc, next)
		if slices.Equal(enc.encodeAll(p), prev.IDs) && slices.Equal(enc.encodeAll(next), got.IDs) &&
			slices.Equal(full.Boundaries, got.Boundaries) {
			if reuse.Tokens > 0 {
				reused++
			}
			continue
		}
		if diff := cmp.Diff(enc.encodeAll(p), prev.IDs, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("encodeWithBoundaries(%q) ids differ (-want +got):\n%s", p, diff)
		}
		if diff := cmp.Diff(enc.encodeAll(next), got.IDs, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("extend(%q → %q) reuse %+v ids differ (-want +got):\n%s", p, next, reuse, diff)
		}
		if diff := cmp.Diff(full.Boundaries, got.Boundaries, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("extend(%q → %q) boundaries differ (-want +got):\n%s", p, next, diff)
		}
	}
	if reused < 1000 {
		t.Errorf("only %d of 3000 extensions reused tokens; the test does not exercise reuse", reused)
	}
}

func TestExtendRejectsBoundaryThatMovesInNext(t *testing.T) {
	t.Parallel()
	enc := newFakeEncoder()
	// In P the text splits at "<" | "<|im_end|>"; in next, "<" + "think>" is one added token, so
	// offset 2 is not a boundary of next and must not be reused.
	p := "a<<|im_end|>"
	next := "a<think>b"
	prev := encodeWithBoundaries(enc, p)
	got, reuse := extend(enc, prev, next)
	if reuse.Tokens != 0 {
		t.Errorf("extend reused %+v, want nothing", reuse)
	}
	if diff := cmp.Diff(enc.encodeAll(next), got.IDs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ids differ (-want +got):\n%s", diff)
	}
	// Longest-match growth: "<|im_start|>" in P but "<|im_start|>x" in next.
	p = "q<|im_start|>y"
	next = "q<|im_start|>xz"
	got, reuse = extend(enc, encodeWithBoundaries(enc, p), next)
	if reuse.Offset != 1 {
		t.Errorf("extend reuse offset %d, want 1 (the start of the grown token)", reuse.Offset)
	}
	if diff := cmp.Diff(enc.encodeAll(next), got.IDs, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("ids differ (-want +got):\n%s", diff)
	}
}

// qwen3Extenders are the two certified suffixes with the real tokenizer, each extending the
// encoding of p to next and returning boundaries with their digests: Extend (digests of the
// previous text) and ExtendText (the previous text itself). seed feeds each one's random cuts.
func qwen3Extenders(m *Renderer) []struct {
	name   string
	seed   uint64
	extend func(p, next string) (Encoding, Reuse)
} {
	return []struct {
		name   string
		seed   uint64
		extend func(p, next string) (Encoding, Reuse)
	}{
		{"Extend", 3, func(p, next string) (Encoding, Reuse) { return m.Extend(m.EncodeWithBoundaries(p), next) }},
		{"ExtendText", 7, func(p, next string) (Encoding, Reuse) {
			enc, reuse, fresh := m.ExtendText(m.EncodeWithBoundaries(p), p, next)
			FillDigests(next, &enc, fresh)
			return enc, reuse
		}},
	}
}

// TestExtendQwen3 checks the certified suffixes with the real tokenizer against the Rust
// oracle's ids of the golden prompts: every earlier text P (a cut of the prompt plus a random
// tail, or another prompt) extended to the prompt T must give exactly T's oracle ids.
func TestExtendQwen3(t *testing.T) {
	m := qwen3(t)
	cases := loadGolden(t, "qwen3")
	tails := []string{"", "<", "<|im_", "think>", "\n", " ", "x", "<|im_end|>", "é", "<think>\n\n</think>\n\n", "ʼ"}
	for _, ext := range qwen3Extenders(m) {
		r := rand.New(rand.NewPCG(ext.seed, ext.seed+1))
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
						cut-- // stay on a UTF-8 boundary so P is valid text
					}
					p = c.text[:cut] + tails[r.IntN(len(tails))]
				}
				got, reuse := ext.extend(p, c.text)
				if !slices.Equal(got.IDs, c.ids) {
					t.Fatalf("%s: %s from a %d-byte prefix (reuse %+v) differs from the oracle", c.name, ext.name, len(p), reuse)
				}
				reusedTokens += reuse.Tokens
				total += len(c.ids)
				if i%8 != 0 {
					continue // the boundary tables are compared on a sample: it is the slow part under -race
				}
				if want := m.EncodeWithBoundaries(c.text); !slices.Equal(want.Boundaries, got.Boundaries) {
					t.Fatalf("%s: %s boundaries differ from EncodeWithBoundaries", c.name, ext.name)
				}
			}
		}
		t.Logf("%s reused %d of %d tokens", ext.name, reusedTokens, total)
	}
}

// FuzzExtend: extending any earlier text's encoding to any new text, by either certified
// suffix, gives exactly the new text's full encoding and boundary table, with the real Qwen3
// tokenizer.
func FuzzExtend(f *testing.F) {
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
	extenders := qwen3Extenders(m)
	f.Fuzz(func(t *testing.T, p, next string) {
		want := m.EncodeWithBoundaries(next)
		for _, ext := range extenders {
			got, reuse := ext.extend(p, next)
			if !slices.Equal(got.IDs, want.IDs) {
				t.Fatalf("%s(%q → %q) reuse %+v: ids differ from Encode", ext.name, p, next, reuse)
			}
			if !slices.Equal(got.Boundaries, want.Boundaries) {
				t.Fatalf("%s(%q → %q): boundaries differ", ext.name, p, next)
			}
		}
	})
}

// FuzzExtendCorrupt: a damaged boundary table (as from a bad artifact) never panics.
func FuzzExtendCorrupt(f *testing.F) {
	f.Add("<|im_start|>a<|im_end|>", "<|im_start|>a<|im_end|>b", 3, -5)
	enc := newFakeEncoder()
	f.Fuzz(func(t *testing.T, p, next string, shift, index int) {
		prev := encodeWithBoundaries(enc, p)
		for i := range prev.Boundaries {
			if i%2 == 0 {
				prev.Boundaries[i].Index = index
			}
			prev.Boundaries[i].Offset += shift
		}
		extend(enc, prev, next)
	})
}

// The digest contract artifacts rely on: the first 16 bytes of SHA-256(text[:Offset]).
func TestBoundaryDigest(t *testing.T) {
	t.Parallel()
	text := "a<|im_start|>b<think></think>c"
	enc := encodeWithBoundaries(newFakeEncoder(), text)
	var offsets []int
	for _, b := range enc.Boundaries {
		sum := sha256.Sum256([]byte(text[:b.Offset]))
		if !bytes.Equal(b.Digest[:], sum[:DigestSize]) {
			t.Errorf("boundary at %d: digest %x, want %x", b.Offset, b.Digest, sum[:DigestSize])
		}
		offsets = append(offsets, b.Offset)
	}
	if want := []int{1, 14, 21}; !slices.Equal(offsets, want) {
		t.Errorf("boundary offsets = %v, want %v", offsets, want)
	}
}

// countingEncoder counts the bytes a certified suffix hands the tokenizer.
type countingEncoder struct {
	segmentEncoder
	bytes int
}

func (c *countingEncoder) AppendEncode(dst []uint32, text string) []uint32 {
	c.bytes += len(text)
	return c.segmentEncoder.AppendEncode(dst, text)
}

func (c *countingEncoder) AppendEncodeTail(dst []uint32, text string) []uint32 {
	c.bytes += len(text)
	return c.segmentEncoder.AppendEncodeTail(dst, text)
}

// TestExtendTextShiftedPieces: a previous prompt that differs from the new one early (a message
// changed, as Qwen3 drops earlier turns' reasoning after a new user query) gives exactly the
// oracle's ids, and the pieces after the change that it holds unchanged (shifted) are copied, not
// tokenized again.
func TestExtendTextShiftedPieces(t *testing.T) {
	m := qwen3(t)
	cases := loadGolden(t, "qwen3")
	inserts := []string{"<think>\nweighing the call\n</think>\n\n", "x", "<|im_end|>\n<|im_start|>user\nmore<|im_end|>\n", "<tool_call>"}
	copied, tried := 0, 0
	for i, c := range cases {
		if c.err != "" {
			continue
		}
		spans := m.seg.addedSpans(c.text)
		if len(spans) < 4 {
			continue
		}
		for k, ins := range inserts {
			// The change goes after an added token in the first half: P = T with ins there
			// (or with the next piece's first byte dropped).
			at := spans[(k+i)%(len(spans)/2)].End
			p := c.text[:at] + ins + c.text[at:]
			if k == 1 && at < len(c.text) && c.text[at] < 0x80 {
				p = c.text[:at] + c.text[at+1:]
			}
			prev := m.EncodeWithBoundaries(p)
			enc := &countingEncoder{segmentEncoder: m.seg}
			var scratch []uint32
			got, reuse, fresh := extendText(enc, m.maxAdded, prev, p, c.text, 0, &scratch)
			if !slices.Equal(got.IDs, c.ids) {
				t.Fatalf("%s insert %d: ids differ from the oracle (reuse %+v)", c.name, k, reuse)
			}
			FillDigests(c.text, &got, fresh)
			if want := m.EncodeWithBoundaries(c.text); !slices.Equal(want.Boundaries, got.Boundaries) {
				t.Fatalf("%s insert %d: boundaries differ from EncodeWithBoundaries", c.name, k)
			}
			tried += len(c.text) - reuse.Offset
			copied += len(c.text) - reuse.Offset - enc.bytes
		}
	}
	if copied == 0 {
		t.Fatalf("no piece was copied from the previous prompt (%d tail bytes)", tried)
	}
	t.Logf("%d of %d tail bytes copied as ids instead of tokenized", copied, tried)
}
