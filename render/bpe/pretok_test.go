package bpe

import (
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"github.com/google/go-cmp/cmp"
)

// pretokDir holds the pre-tokenizer corpora and the oracle's spans (see testdata/unicode/README.md).
func pretokDir() string { return filepath.Join(*testdataDir, "pretok") }

// goldenSpans is one line of a *.golden.jsonl.gz file: the end byte offsets of the oracle's pieces.
type goldenSpans struct {
	Qwen  []int `json:"qwen"`
	O200k []int `json:"o200k"`
	GPT2  []int `json:"gpt2"`
}

var splitters = []struct {
	name    string
	pattern string
	split   splitFunc
	ends    func(goldenSpans) []int
}{
	{"qwen", patternQwen, splitQwen, func(g goldenSpans) []int { return g.Qwen }},
	{"o200k", patternO200k, splitO200k, func(g goldenSpans) []int { return g.O200k }},
	{"gpt2", patternGPT2Split, splitGPT2, func(g goldenSpans) []int { return g.GPT2 }},
}

func spanEnds(spans []span) []int {
	ends := make([]int, len(spans))
	for i, sp := range spans {
		ends[i] = sp.end
	}
	return ends
}

// TestSplitGolden compares the scanners with the oracle's pieces on the seeded random corpus and on
// the hand-picked edge cases; every mismatch is a bug.
func TestSplitGolden(t *testing.T) {
	for _, corpus := range []string{"edge", "alphabet", "corpus"} {
		in := readJSONLines[string](t, filepath.Join(pretokDir(), corpus+".jsonl.gz"))
		want := readJSONLines[goldenSpans](t, filepath.Join(pretokDir(), corpus+".golden.jsonl.gz"))
		if len(in) != len(want) || len(in) == 0 {
			t.Fatalf("%s: %d inputs, %d golden lines", corpus, len(in), len(want))
		}
		for _, sp := range splitters {
			t.Run(corpus+"/"+sp.name, func(t *testing.T) {
				bad := 0
				var spans []span
				for i, s := range in {
					spans = sp.split(spans[:0], s)
					if ends := spanEnds(spans); !slices.Equal(sp.ends(want[i]), ends) {
						if bad++; bad <= 5 {
							t.Errorf("line %d %+q: piece ends (-oracle +got):\n%s", i+1, s, cmp.Diff(sp.ends(want[i]), ends))
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d lines differ from the oracle", bad, len(in))
				}
			})
		}
	}
}

func TestSplitExamples(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"qwen", "Hello  world", []string{"Hello", " ", " world"}},
		{"qwen", "it'ſ  x\r\n\n  y  ", []string{"it", "'ſ", " ", " x", "\r\n\n", " ", " y", "  "}},
		{"qwen", "a!!\n\n/b 123", []string{"a", "!!\n\n", "/b", " ", "1", "2", "3"}},
		{"qwen", "x \u00a0\u3000y", []string{"x", " \u00a0", "\u3000y"}},
		{"o200k", "HTTPServer's 12345", []string{"HTTPServer's", " ", "123", "45"}},
		{"o200k", "!!/\n/x", []string{"!!/\n/", "x"}},
		{"o200k", "Aʰb Aʰ", []string{"Aʰb", " Aʰ"}},
		{"gpt2", "I'll  go", []string{"I", "'ll", " ", " go"}},
	} {
		split, _ := splitterFor(map[string]string{"qwen": patternQwen, "o200k": patternO200k, "gpt2": patternGPT2Split}[tc.name])
		var got []string
		for _, sp := range split(nil, tc.in) {
			got = append(got, tc.in[sp.start:sp.end])
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s %+q (-want +got):\n%s", tc.name, tc.in, diff)
		}
	}
}

func TestSplitterFor(t *testing.T) {
	for _, sp := range splitters {
		if _, ok := splitterFor(sp.pattern); !ok {
			t.Errorf("%s pattern not recognised", sp.name)
		}
	}
	if _, ok := splitterFor(`\w+`); ok {
		t.Error(`\w+ reported as supported`)
	}
}

// regexpSplit runs pattern through regexp2 (a backtracking engine with lookahead, but Go's Unicode
// tables) with the "Isolated" behaviour: matches and the gaps between them are pieces.
func regexpSplit(re *regexp2.Regexp, s string) []span {
	runes := []rune(s)
	byteOff := make([]int, len(runes)+1)
	for i, r := range runes {
		byteOff[i+1] = byteOff[i] + utf8.RuneLen(r)
	}
	var out []span
	prev := 0
	m, _ := re.FindRunesMatch(runes)
	for m != nil {
		start, end := byteOff[m.Index], byteOff[m.Index+m.Length]
		if start > prev {
			out = append(out, span{prev, start})
		}
		if end > start {
			out = append(out, span{start, end})
		}
		prev = end
		m, _ = re.FindNextMatch(m)
	}
	if prev < len(s) {
		out = append(out, span{prev, len(s)})
	}
	return out
}

// goAgrees reports whether Go's Unicode tables (what regexp2 uses) classify r as the oracle does,
// for every class the patterns use, and regexp2's case folding agrees with Oniguruma's on it: its
// \s is Go's unicode.IsSpace, and its (?i) does not fold U+017F (ſ) to s.
func goAgrees(r rune) bool {
	if r == utf8.RuneError || !utf8.ValidRune(r) || r == 'ſ' {
		return false
	}
	p := propsOf(r)
	checks := []struct {
		bit   uint16
		table *unicode.RangeTable
	}{
		{propL, unicode.L}, {propN, unicode.N}, {propM, unicode.M}, {propLu, unicode.Lu},
		{propLl, unicode.Ll}, {propLt, unicode.Lt}, {propLm, unicode.Lm}, {propLo, unicode.Lo},
	}
	for _, c := range checks {
		if (p&c.bit != 0) != unicode.Is(c.table, r) {
			return false
		}
	}
	return (p&propSpace != 0) == unicode.IsSpace(r)
}

// checkCover reports how spans fail to cover s exactly, in order, with non-empty pieces.
func checkCover(spans []span, s string) error {
	prev := 0
	for i, sp := range spans {
		if sp.start != prev || sp.end <= sp.start {
			return fmt.Errorf("piece %d is [%d,%d) after %d", i, sp.start, sp.end, prev)
		}
		prev = sp.end
	}
	if prev != len(s) {
		return fmt.Errorf("pieces end at %d of %d", prev, len(s))
	}
	return nil
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "Hello world's  end\r\n\n  x", "it'ſ 'S 'ʼ", "HTTPServer12345", " !!\n/\n/x",
		"e\u0301 \u0301a", "漢字 😀👍🏽 \u3000\u00a0x", "{\"a\": [1, 2]}\n", "  \t\n", "Aʰb Aʰ ǅa", "\xffbad\xc5"} {
		f.Add(s)
	}
	res := make([]*regexp2.Regexp, len(splitters))
	for i, sp := range splitters {
		res[i] = regexp2.MustCompile(sp.pattern, regexp2.Unicode)
	}
	f.Fuzz(func(t *testing.T, s string) {
		comparable := utf8.ValidString(s)
		for _, r := range s {
			if !goAgrees(r) {
				comparable = false
				break
			}
		}
		for i, sp := range splitters {
			got := sp.split(nil, s)
			if err := checkCover(got, s); err != nil {
				t.Fatalf("%s %+q: %v", sp.name, s, err)
			}
			if !comparable {
				continue
			}
			if diff := cmp.Diff(spanEnds(regexpSplit(res[i], s)), spanEnds(got)); diff != "" {
				t.Errorf("%s %+q: piece ends (-regexp2 +got):\n%s", sp.name, s, diff)
			}
		}
	})
}

func TestSplitNoAlloc(t *testing.T) {
	s := mixedText(4096)
	dst := make([]span, 0, len(s))
	for _, sp := range splitters {
		if n := testing.AllocsPerRun(10, func() { dst = sp.split(dst[:0], s) }); n != 0 {
			t.Errorf("%s: %v allocations with a large enough dst", sp.name, n)
		}
	}
}

func BenchmarkSplitQwen(b *testing.B)  { benchSplit(b, splitQwen) }
func BenchmarkSplitO200k(b *testing.B) { benchSplit(b, splitO200k) }

func benchSplit(b *testing.B, split splitFunc) {
	s := mixedText(1 << 20)
	var dst []span
	b.SetBytes(int64(len(s)))
	b.ReportAllocs()
	for b.Loop() {
		dst = split(dst[:0], s)
	}
}

// BenchmarkSplitRegexp2 measures the regexp2 cross-check, for comparison.
func BenchmarkSplitRegexp2(b *testing.B) {
	s := mixedText(1 << 18)
	re := regexp2.MustCompile(patternQwen, regexp2.Unicode)
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		_ = regexpSplit(re, s)
	}
}
