package bpe

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// TestNFCCodePoints compares every code point on its own with the oracle's NFC
// (testdata/unicode/nfc_codepoints.txt lists those that change).
func TestNFCCodePoints(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(unicodeDir(), "nfc_codepoints.txt"))
	if err != nil {
		t.Fatal(err)
	}
	changed := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if line == "" || line[0] == '#' {
			continue
		}
		in, out, _ := strings.Cut(line, ";")
		changed[hexString(t, in)] = hexString(t, out)
	}
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := string(r)
		want, ok := changed[s]
		if !ok {
			want = s
		}
		if got := normalizeNFC(s); got != want {
			if bad++; bad < 10 {
				t.Errorf("NFC(U+%04X) = %+q, want %+q", r, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of all code points differ from the oracle", bad)
	}
}

func hexString(t *testing.T, s string) string {
	var b strings.Builder
	for f := range strings.FieldsSeq(s) {
		r, err := strconv.ParseUint(f, 16, 32)
		if err != nil {
			t.Fatalf("bad hex %q", f)
		}
		b.WriteRune(rune(r))
	}
	return b.String()
}

// TestNFCGolden compares random sequences (combining marks, Hangul, decomposables, code points
// added after Unicode 9.0) with the oracle's NFC.
func TestNFCGolden(t *testing.T) {
	in := readJSONLines[string](t, filepath.Join(unicodeDir(), "nfc_input.jsonl.gz"))
	want := readJSONLines[string](t, filepath.Join(unicodeDir(), "nfc_golden.jsonl.gz"))
	if len(in) != len(want) || len(in) == 0 {
		t.Fatalf("%d inputs, %d golden lines", len(in), len(want))
	}
	bad := 0
	for i, s := range in {
		if got := normalizeNFC(s); got != want[i] {
			if bad++; bad < 10 {
				t.Errorf("line %d: NFC(%+q) = %+q, want %+q", i+1, s, got, want[i])
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d lines differ from the oracle", bad, len(in))
	}
}

func TestNFC(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"plain ascii", "plain ascii"},
		{"e\u0301", "é"},
		{"\u1100\u1161\u11a8", "각"},
		{"a\u0328\u0301", "ą\u0301"},
		// U+1ABB (Unicode 14, ccc 230 in newer data) is a starter for the crate: no reordering across it.
		{"a\u0301\u1abb\u0300", "á\u1abb\u0300"},
		{"invalid \xff e\u0301", "invalid \xff é"},
	} {
		if got := normalizeNFC(tc.in); got != tc.want {
			t.Errorf("normalizeNFC(%+q) = %+q, want %+q", tc.in, got, tc.want)
		}
	}
}

func TestNFCNoAllocWhenNormal(t *testing.T) {
	for _, s := range []string{"hello world", "déjà vu — 漢字 😀"} {
		if n := testing.AllocsPerRun(20, func() { _ = normalizeNFC(s) }); n != 0 {
			t.Errorf("normalizeNFC(%q): %v allocations", s, n)
		}
	}
}

func BenchmarkNFC(b *testing.B) {
	for _, bc := range []struct{ name, text string }{
		{"ascii", strings.Repeat("The quick brown fox jumps over the lazy dog. ", 1<<14)},
		{"mixed", mixedText(1 << 20)},
		{"decomposed", strings.Repeat("e\u0301 a\u0308 \u1100\u1161 ", 1<<15)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			for b.Loop() {
				_ = normalizeNFC(bc.text)
			}
		})
	}
}

// mixedText returns about n bytes of mixed prose, code, CJK, emoji and whitespace, deterministically.
func mixedText(n int) string {
	parts := []string{
		"The quick brown fox doesn't jump; it's LAZY.", " ", "  ", "\n", "\r\n\r\n", "\t",
		"func main() {\n\tfmt.Println(\"héllo\")\n}\n", "価格は1234円です。", "Привет, мир!", "😀👍🏽",
		`{"a": [1, 2.5, null], "b": "x/y//z"}`, "naïve café", "١٢٣ ٤٥٦", "    indented code\n", "e\u0301",
	}
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		b.WriteString(parts[(i*7+i/3)%len(parts)])
	}
	s := b.String()
	for !utf8.ValidString(s[:n]) {
		n--
	}
	return s[:n]
}

// FuzzNFC checks properties that hold for any input: valid UTF-8 stays valid, NFC is idempotent,
// and without code points unassigned in Unicode 9.0 the result is x/text's NFC.
func FuzzNFC(f *testing.F) {
	for _, s := range []string{"", "abc", "e\u0301", "a\u0301\u1abb\u0300", "\u1100\u1161\u11a8", "\xffe\u0301", "ǅ\u0328\u0301"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalizeNFC(s)
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("normalizeNFC(%+q) = %+q is not valid UTF-8", s, got)
		}
		if again := normalizeNFC(got); again != got {
			t.Errorf("not idempotent: %+q -> %+q -> %+q", s, got, again)
		}
		hasNew := false
		for _, r := range s {
			hasNew = hasNew || propsOf(r)&propNew != 0
		}
		if !hasNew && got != norm.NFC.String(s) {
			t.Errorf("normalizeNFC(%+q) = %+q, x/text gives %+q", s, got, norm.NFC.String(s))
		}
	})
}
