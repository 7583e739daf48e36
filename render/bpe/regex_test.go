package bpe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// splitPatternJSON is one entry of testdata/pretok/patterns.json.
type splitPatternJSON struct {
	Name          string  `json:"name"`
	Pattern       *string `json:"pattern"`
	PatternString *string `json:"pattern_string"`
	Behavior      string  `json:"behavior"`
	Invert        bool    `json:"invert"`
}

// piecesText writes pieces as tools/oracle/split_patterns.js does: "start:end" joined by ",".
func piecesText(b *strings.Builder, spans []span) {
	for i, sp := range spans {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sp.start))
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(sp.end))
	}
}

// TestSplitPatternsGolden runs every Split of testdata/pretok/patterns.json over the pre-tokenizer
// corpora (100k lines) on the general engine, and on the hand-written scanner where one exists, and
// compares the SHA-256 of each chunk of 1000 lines' pieces with the Rust oracle's
// (tools/oracle/split_patterns.js).
func TestSplitPatternsGolden(t *testing.T) {
	var patterns []splitPatternJSON
	data, err := os.ReadFile(filepath.Join(pretokDir(), "patterns.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &patterns); err != nil {
		t.Fatal(err)
	}
	var golden map[string]map[string][]string
	data, err = os.ReadFile(filepath.Join(pretokDir(), "patterns.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &golden); err != nil {
		t.Fatal(err)
	}
	corpora := map[string][]string{}
	for _, c := range []string{"edge", "alphabet", "corpus"} {
		corpora[c] = readJSONLines[string](t, filepath.Join(pretokDir(), c+".jsonl.gz"))
	}
	for _, p := range patterns {
		behavior, ok := parseBehavior(p.Behavior)
		if !ok {
			t.Fatalf("%s: behavior %q", p.Name, p.Behavior)
		}
		engines := map[string]splitFunc{}
		if p.Pattern != nil {
			split, err := regexSplitter(*p.Pattern, behavior, p.Invert)
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			engines["general"] = split
			if scanner, ok := splitterFor(*p.Pattern); ok && behavior == behaviorIsolated && !p.Invert {
				engines["scanner"] = scanner
			}
		} else {
			c := componentJSON{Type: "Split", Pattern: &patternJSON{String: p.PatternString}, Behavior: p.Behavior, Invert: p.Invert}
			split, _, err := splitStep(c)
			if err != nil {
				t.Fatalf("%s: %v", p.Name, err)
			}
			engines["string"] = split
		}
		for engine, split := range engines {
			t.Run(p.Name+"/"+engine, func(t *testing.T) {
				if testing.Short() && engine == "general" && p.Name != "deepseek_main" {
					t.Skip("general engine sweep skipped in -short mode")
				}
				for _, c := range []string{"edge", "alphabet", "corpus"} {
					want := golden[p.Name][c]
					lines := corpora[c]
					if len(want) != (len(lines)+999)/1000 {
						t.Fatalf("%s: %d digests for %d lines", c, len(want), len(lines))
					}
					var spans []span
					for k := range want {
						var b strings.Builder
						chunk := lines[k*1000 : min(len(lines), (k+1)*1000)]
						for i, s := range chunk {
							if i > 0 {
								b.WriteByte('\n')
							}
							spans = split(spans[:0], s)
							piecesText(&b, spans)
						}
						sum := sha256.Sum256([]byte(b.String()))
						if got := hex.EncodeToString(sum[:])[:16]; got != want[k] {
							t.Errorf("%s lines %d-%d: pieces differ from the oracle's (node tools/oracle/split_patterns.js --dump %s %s)",
								c, k*1000+1, k*1000+len(chunk), p.Name, c)
						}
					}
				}
			})
		}
	}
}

func TestRegexRefuses(t *testing.T) {
	for _, pattern := range []string{
		`^a`, `a$`, `\d+`, `\w`, `\b`, `(?<=a)b`, `(?<!a)b`, `(?<n>a)`, `\1`, `(?m:a)`, `[[:alpha:]]`,
		`[a[b]]`, `[a&&b]`, `(?i:k)`, `(?i:\p{L})`, `(?i:[a-z])`, `(?i:ss)`, `(?i:st)`, `\p{Greek}`,
		`(a*)*`, `(?:x?)+`, `a{2,1}`, `a{`, `a**`, `(`, `)`, `[a`, `\`, `a{1,2}+`, `\p{Han}`,
	} {
		if _, err := compileRegex(pattern); err == nil {
			t.Errorf("compileRegex(%q) = nil error, want a refusal", pattern)
		}
	}
	// Through Load: the error wraps ErrUnsupported and names the pattern.
	in := strings.Replace(string(readModel(t, "qwen3")), `\\s+(?!\\S)|\\s+"`, `\\s+(?!\\S)|\\w+"`, 1)
	if _, err := Load([]byte(in)); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), `\\w`) {
		t.Errorf("Load with \\w: %v", err)
	}
}

func TestRegexExamples(t *testing.T) {
	tests := []struct {
		pattern, in string
		want        []span
	}{
		{`a|ab`, "ab", []span{{0, 1}}},
		{`a+?`, "aaa", []span{{0, 1}, {1, 2}, {2, 3}}},
		{`\s+(?!\S)|\s+`, "   x", []span{{0, 2}, {2, 3}}},
		{`\p{N}{1,3}`, "12345", []span{{0, 3}, {3, 5}}},
		{`x*`, "axx", []span{{0, 0}, {1, 3}}},
		{`(?i:'s)`, "'S'ſ's", []span{{0, 2}, {2, 5}, {5, 7}}},
		{`[一-龥]+`, "a中文b", []span{{1, 7}}},
	}
	for _, tt := range tests {
		re, err := compileRegex(tt.pattern)
		if err != nil {
			t.Fatalf("%q: %v", tt.pattern, err)
		}
		got := re.findAll(nil, tt.in)
		if len(got) != len(tt.want) {
			t.Errorf("%q on %q: %v, want %v", tt.pattern, tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("%q on %q: %v, want %v", tt.pattern, tt.in, got, tt.want)
				break
			}
		}
	}
}

// FuzzRegexSplit: the general engine agrees with the hand-written scanners on any input.
func FuzzRegexSplit(f *testing.F) {
	for _, s := range []string{"Hello world", "  a\n\n b", "don't 123456 中文", "x'S  \t\r\n"} {
		f.Add(s)
	}
	type pair struct {
		general, scanner splitFunc
	}
	var pairs []pair
	for _, p := range []string{patternQwen, patternO200k, patternGPT2Split, patternLlama3, patternTekken} {
		g, err := regexSplitter(p, behaviorIsolated, false)
		if err != nil {
			f.Fatal(err)
		}
		s, _ := splitterFor(p)
		pairs = append(pairs, pair{g, s})
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, p := range pairs {
			a, b := p.general(nil, s), p.scanner(nil, s)
			if len(a) != len(b) {
				t.Fatalf("pattern %d on %q: general %v, scanner %v", i, s, a, b)
			}
			for k := range a {
				if a[k] != b[k] {
					t.Fatalf("pattern %d on %q: general %v, scanner %v", i, s, a, b)
				}
			}
		}
	})
}

// deepSeekGeneral is DeepSeek's Sequence of three Splits on the general engine.
func deepSeekGeneral(t testing.TB) splitFunc {
	var steps []splitFunc
	for _, p := range []string{patternDeepSeekDigits, patternDeepSeekCJK, patternDeepSeekMain} {
		s, err := regexSplitter(p, behaviorIsolated, false)
		if err != nil {
			t.Fatal(err)
		}
		steps = append(steps, s)
	}
	return chainSplits(steps)
}

// TestDeepSeekScanner: the fused scanner equals the general engine's Sequence (whose patterns are
// checked against the oracle by TestSplitPatternsGolden) on the pre-tokenizer corpora.
func TestDeepSeekScanner(t *testing.T) {
	general := deepSeekGeneral(t)
	for _, c := range []string{"edge", "alphabet", "corpus"} {
		if testing.Short() && c != "edge" {
			continue
		}
		bad := 0
		var a, b []span
		for i, s := range readJSONLines[string](t, filepath.Join(pretokDir(), c+".jsonl.gz")) {
			a, b = general(a[:0], s), splitDeepSeek(b[:0], s)
			if !slicesEqual(a, b) {
				if bad++; bad <= 5 {
					t.Errorf("%s line %d %+q: general %v, scanner %v", c, i+1, s, a, b)
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d lines differ", c, bad)
		}
	}
}

func slicesEqual(a, b []span) bool {
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

func FuzzDeepSeekSplit(f *testing.F) {
	for _, s := range []string{"Hello, world! 12345 中文ひらがなカタカナ", " !!\n\n a", "\t\u0301x", "゠・ー゙"} {
		f.Add(s)
	}
	general := deepSeekGeneral(f)
	f.Fuzz(func(t *testing.T, s string) {
		if a, b := general(nil, s), splitDeepSeek(nil, s); !slicesEqual(a, b) {
			t.Fatalf("%+q: general %v, scanner %v", s, a, b)
		}
	})
}

// BenchmarkSplitDeepSeek: DeepSeek's three Splits on the general engine and fused by hand, over
// 1 MiB of mixed text (the measurement behind pretok_deepseek.go).
func BenchmarkSplitDeepSeek(b *testing.B) {
	text := string(readCorpusFile(b, "mixed.txt"))
	for _, e := range []struct {
		name  string
		split splitFunc
	}{{"general", deepSeekGeneral(b)}, {"scanner", splitDeepSeek}} {
		b.Run(e.name, func(b *testing.B) {
			var spans []span
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				spans = e.split(spans[:0], text)
			}
		})
	}
}

// FuzzRegexCompile: the pattern parser never panics, and whatever it accepts finds matches in any
// text without panicking, each within the text and in order.
func FuzzRegexCompile(f *testing.F) {
	for _, p := range []string{patternQwen, patternO200k, patternDeepSeekMain, patternDeepSeekCJK, `a|b*?c{2,3}`, `(?>x+)(?=y)(?!z)`, `[^\p{L}\s]`, `\x{41}\u0042.`} {
		f.Add(p, "Hello, world! 123 中文 \n\n x")
	}
	f.Fuzz(func(t *testing.T, pattern, text string) {
		re, err := compileRegex(pattern)
		if err != nil {
			return
		}
		prev := 0
		for _, m := range re.findAll(nil, text) {
			if m.start < prev || m.end < m.start || m.end > len(text) {
				t.Fatalf("pattern %q on %q: bad match %v after %d", pattern, text, m, prev)
			}
			prev = m.end
		}
	})
}

// TestGeneralEngineTokenizer loads Qwen3 with its Split pattern wrapped in a group, which no scanner
// knows, so the whole tokenizer runs on the general engine (Notes says so); its ids must still be
// the oracle's. Four goroutines share it (run with -race).
func TestGeneralEngineTokenizer(t *testing.T) {
	base := string(readModel(t, "qwen3"))
	old := `"Regex": "(?i:'s|'t|'re|'ve|'m|'ll|'d)|`
	in := strings.Replace(base, old, `"Regex": "(?:(?i:'s|'t|'re|'ve|'m|'ll|'d))|`, 1)
	if in == base {
		t.Fatal("test input unchanged")
	}
	tok, err := Load([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(tok.Notes()) != 1 || !strings.Contains(tok.Notes()[0], "general regex engine") {
		t.Errorf("Notes() = %q, want one note about the general engine", tok.Notes())
	}
	cases := loadGolden(t, "qwen3", "edge")
	if !testing.Short() {
		cases = append(cases, loadGolden(t, "qwen3", "fuzz")[:8000]...)
	}
	errs := make(chan string, 4)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := g; i < len(cases); i += 4 {
				if got := tok.Encode(cases[i].text); !equalIDs(got, cases[i].want) {
					errs <- fmt.Sprintf("%s: %.60q: %v, want %v", cases[i].name, cases[i].text, got, cases[i].want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
