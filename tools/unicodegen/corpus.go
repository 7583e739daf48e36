package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Corpus sizes. The seed is fixed so that regeneration is reproducible.
const (
	corpusSeed      = 20261129
	pretokCorpusLen = 60000
	nfcCorpusLen    = 60000
	alphabetLen     = 40000
)

// alphabet holds one or two code points of every property class of the tables plus the characters
// the patterns name, for short strings that exercise the scanners' backtracking.
var alphabet = []rune("abAB01 \n\r\t/'!.sStlLeErRvVdm_\u01c5\u02b0\u00aa\u4e00\u0301\u0300\U00010a48\u1c89\u0560" +
	"\u08c9\u05ef\u07fd\u0378\u017f\u00a0\u3000\u0085\u2028\u00e9\u0661\u00b2\U0001f600\u200d\ufe0f\u212a\u02bc\u2019")

// randomAlphabet returns a short random string over alphabet.
func randomAlphabet(rng *rand.Rand) string {
	var b strings.Builder
	for range 1 + rng.IntN(10) {
		b.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

// pools holds code points by kind, for the random corpora.
type pools struct {
	byClass  map[string][]rune // L, Lu, Ll, Lt, Lm, Lo, M, N, space, other
	newer    []rune            // letters, marks and digits unassigned in Unicode 9.0 (added in 10..16)
	goMissed []rune            // letters, marks, digits in the oracle's sets that Go's unicode tables lack
	ccc      []rune            // canonical combining class != 0 (x/text)
	decomp   []rune            // has a canonical decomposition (x/text)
	hangul   []rune            // jamo and precomposed syllables
	cjk      []rune
	emoji    []rune
}

func loadPools(in string) (*pools, error) {
	p := &pools{byClass: map[string][]rune{}}
	member := map[string]map[rune]bool{}
	for _, name := range []string{"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "N", "space"} {
		cps, err := readSet(filepath.Join(in, name+".txt"))
		if err != nil {
			return nil, err
		}
		member[name] = map[rune]bool{}
		for _, c := range cps {
			p.byClass[name] = append(p.byClass[name], rune(c))
			member[name][rune(c)] = true
		}
	}
	for r := rune(0); r <= maxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		l, m, n := member["L"][r], member["M"][r], member["N"][r]
		if !l && !m && !n && !member["space"][r] && unicode.In(r, unicode.P, unicode.S) {
			p.byClass["other"] = append(p.byClass["other"], r)
		}
		if (l && !unicode.IsLetter(r)) || (m && !unicode.IsMark(r)) || (n && !unicode.IsNumber(r)) {
			p.goMissed = append(p.goMissed, r)
		}
		if (l || m || n) && propNewOf(r) {
			p.newer = append(p.newer, r)
		}
		props := norm.NFC.PropertiesString(string(r))
		if props.CCC() != 0 {
			p.ccc = append(p.ccc, r)
		}
		if len(norm.NFD.PropertiesString(string(r)).Decomposition()) > 0 {
			p.decomp = append(p.decomp, r)
		}
		switch {
		case r >= 0x1100 && r <= 0x11FF, r >= 0xAC00 && r <= 0xD7A3, r >= 0x3130 && r <= 0x318F:
			p.hangul = append(p.hangul, r)
		case r >= 0x4E00 && r <= 0x9FFF, r >= 0x3040 && r <= 0x30FF, r >= 0x20000 && r <= 0x2A6DF:
			p.cjk = append(p.cjk, r)
		case r >= 0x1F300 && r <= 0x1FAFF:
			p.emoji = append(p.emoji, r)
		}
	}
	return p, nil
}

func propNewOf(r rune) bool { return !unicode.Is(assigned9(), r) }

func pick(rng *rand.Rand, rs []rune) rune { return rs[rng.IntN(len(rs))] }

var (
	words  = []string{"the", "Hello", "WORLD", "don", "it", "We", "they", "I", "HTTPServer", "camelCase", "snake_case", "naïve", "Ünïcödé", "straße", "ǅemal", "ʰello", "œuvre", "Привет", "мир", "γειά", "שלום", "مرحبا", "नमस्ते", "ﬁne", "İstanbul"}
	contrs = []string{"'s", "'S", "'t", "'T", "'re", "'RE", "'rE", "'ve", "'VE", "'m", "'M", "'ll", "'LL", "'lL", "'d", "'D", "'ſ", "'ʼ", "ʼs", "’s", "'", "''", "'x", "'1", "' s"}
	puncts = []string{"!", "?", ".", ",", ";", ":", "...", "--", "/", "//", "///", "(", ")", "{", "}", "[", "]", "<", ">", "=", "==", "=>", "+", "-", "*", "&&", "||", "#", "@", "$", "%", "^", "~", "`", "\"", "\\", "|", "«", "»", "“", "”", "、", "。", "！", "…", "—", "€", "©", "°", "±", "¿", "¡"}
	codes  = []string{"func main() {\n\tfmt.Println(\"hi\")\n}\n", "if (x != null) { return x; }", "for i in range(10):\n    print(i)\r\n", "SELECT * FROM t WHERE a='b';", "<div class=\"x\">a &amp; b</div>", "http://example.com/a/b?c=d&e=f", "a/b/c/", "//comment\n/* block */", "#include <stdio.h>\n", "x += 1; y -= 2;\n\n\n", "    indented\n\tline\r\n", "$ ls -la /usr/bin\n"}
	jsons  = []string{`{"a": 1, "b": [1, 2.5, -3e10], "c": null}`, `{"name":"get_weather","arguments":{"city":"Paris"}}`, `[{"x":"y\n"},{"z":true}]`, "{\n  \"k\": \"v\"\n}\n", `"\u00e9\ud83d\ude00"`}
	spaces = []string{" ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", "\r", " \n", "\n ", " \n ", "\r\n\r\n", "\t\n", "\u00a0", "\u3000", "\u2003", "\u0085", "\u2028", "\u2029", "\u202f", "\u205f", "\u1680", "\u000b", "\u000c", "\u200b", "\ufeff", "\u180e"}
	emojis = []string{"😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "❤️", "✌🏿", "🇫🇷", "1️⃣", "🧑‍💻", "☺︎"}
)

// randomPretok returns one random pre-tokenizer test string.
func randomPretok(rng *rand.Rand, p *pools) string {
	var b strings.Builder
	n := 1 + rng.IntN(12)
	for range n {
		switch k := rng.IntN(100); {
		case k < 14:
			b.WriteString(words[rng.IntN(len(words))])
		case k < 24:
			b.WriteString(contrs[rng.IntN(len(contrs))])
		case k < 38:
			b.WriteString(spaces[rng.IntN(len(spaces))])
		case k < 44:
			for range 1 + rng.IntN(3) {
				b.WriteString(puncts[rng.IntN(len(puncts))])
			}
		case k < 50:
			for range 1 + rng.IntN(6) {
				if rng.IntN(3) == 0 {
					b.WriteRune(pick(rng, p.byClass["N"]))
				} else {
					b.WriteByte(byte('0' + rng.IntN(10)))
				}
			}
		case k < 54:
			for range 1 + rng.IntN(5) {
				b.WriteRune(pick(rng, p.cjk))
			}
		case k < 57:
			for range 1 + rng.IntN(4) {
				b.WriteRune(pick(rng, p.hangul))
			}
		case k < 60:
			b.WriteString(emojis[rng.IntN(len(emojis))])
		case k < 65:
			b.WriteRune(pick(rng, p.ccc))
		case k < 70:
			b.WriteRune(pick(rng, p.newer))
		case k < 73:
			b.WriteRune(pick(rng, p.goMissed))
		case k < 76:
			b.WriteString(codes[rng.IntN(len(codes))])
		case k < 78:
			b.WriteString(jsons[rng.IntN(len(jsons))])
		case k < 80:
			b.WriteString(strings.Repeat("/", 1+rng.IntN(4)))
		default:
			classes := []string{"L", "Lu", "Ll", "Lt", "Lm", "Lo", "M", "N", "space", "other"}
			c := classes[rng.IntN(len(classes))]
			for range 1 + rng.IntN(3) {
				b.WriteRune(pick(rng, p.byClass[c]))
			}
		}
	}
	return b.String()
}

// randomNFC returns one random sequence for the NFC oracle.
func randomNFC(rng *rand.Rand, p *pools) string {
	var b strings.Builder
	n := 1 + rng.IntN(8)
	for range n {
		switch k := rng.IntN(100); {
		case k < 25:
			b.WriteRune(pick(rng, p.ccc))
		case k < 40:
			b.WriteRune(pick(rng, p.decomp))
		case k < 52:
			b.WriteRune(pick(rng, p.hangul))
		case k < 65:
			b.WriteRune(pick(rng, p.newer))
		case k < 72:
			b.WriteRune(pick(rng, p.byClass["M"]))
		case k < 85:
			b.WriteRune(rune('A' + rng.IntN(58)))
		case k < 90:
			b.WriteRune(pick(rng, p.byClass["L"]))
		default:
			for {
				r := rune(rng.IntN(maxRune + 1))
				if utf8.ValidRune(r) {
					b.WriteRune(r)
					break
				}
			}
		}
	}
	return b.String()
}

// edgePretok lists hand-picked pre-tokenizer cases.
var edgePretok = []string{
	"", " ", "  ", "   ", "a", " a", "  a", "   a", "a ", "a  ", "\n", "\r\n", "\r", "\n\n", " \n", "\n ", " \n ",
	"  \n  x", "x\n\n  y", "x \n", "x\t\ny", "\t\tfoo", "\u00a0foo", "\u00a0\u00a0foo", "\u3000漢字", "x\u2028y",
	"x\u0085\u0085y", "end  ", "end \n", "it's", "IT'S", "it'ſ", "It'ſ'S", "'ll", "'LL", "'lL", "'Ll", "'re", "'Re", "'rE",
	"'ve", "we'd", "'", "''", "'s'", "''s", "'ʼ", "ʼs", "donʼt", "don’t", "don't've", "x'll'd", "'K", "'\u212a", "'ſt",
	"123", "1234567", "١٢٣٤٥", "Ⅻ", "½¾", "x²³", "a1b2", "a/b//c", "!!/\n/", "x!!\r\n\r\n", " !!\n", " !!\n/\n/x",
	"/", "//", " /", " //\n", "👨‍👩‍👧", "e\u0301", "\u0301abc", " \u0301", "!\u0301", "a\u0301\u0302b", "\u0301",
	"Ǆǅǆ", "ǅa", "ABCdef", "abcDEF", "HTTPServer", "ˆ", "ʰello", "ÀB", "aʰB", "Aʰb", "xAʰ's", "ABC's", "abc'S",
	" Hello's", "\nHello", "\u200bword", "word\u200b", "\ufeffBOM", "tab\there", "  \t  ", " \t\n\t x", "\r\r\n\n\r",
	"a\r\n\r\nb", "{\"a\": 1}\n", "func() {\n\treturn\n}", "<|im_start|>user\nhi<|im_end|>", "x  \n\n  \n y",
	"\U0001F600\U0001F600", "ﬁ ﬂ", "İi", "ǈ's", "Σσς", "ΑΒΓ'd", "Ⅷ'm", "𝐀𝐁𝐂", "𝟎𝟏", "ㄱㅏ", "가나다", "\u1100\u1161\u11a8",
}

// writeCorpora writes the corpora under dir (the repository's testdata); scale multiplies their
// sizes and seed replaces corpusSeed, for one-off larger checks outside the repository.
func writeCorpora(in, dir string, seed uint64, scale int) error {
	p, err := loadPools(in)
	if err != nil {
		return err
	}
	gen := func(n int, stream uint64, f func(*rand.Rand) string) []string {
		rng := rand.New(rand.NewPCG(seed, stream))
		out := make([]string, 0, n*scale)
		for range n * scale {
			out = append(out, f(rng))
		}
		return out
	}
	files := []struct {
		path  string
		lines []string
	}{
		{"pretok/corpus.jsonl.gz", gen(pretokCorpusLen, 1, func(r *rand.Rand) string { return randomPretok(r, p) })},
		{"pretok/edge.jsonl.gz", edgePretok},
		{"pretok/alphabet.jsonl.gz", gen(alphabetLen, 3, randomAlphabet)},
		{"unicode/nfc_input.jsonl.gz", gen(nfcCorpusLen, 2, func(r *rand.Rand) string { return randomNFC(r, p) })},
	}
	for _, f := range files {
		path := filepath.Join(dir, f.path)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		if err := writeLines(path, f.lines); err != nil {
			return err
		}
	}
	return nil
}

// writeLines writes one JSON string per line, gzipped (deterministically: no name or time header).
func writeLines(path string, lines []string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	zw, err := gzip.NewWriterLevel(f, gzip.BestCompression)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(zw)
	for _, s := range lines {
		j, err := json.Marshal(s)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		w.Write(j)
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return f.Close()
}
