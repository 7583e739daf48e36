package bpe

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"flag"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/rangetable"
)

// Directories of the oracle data (see testdata/unicode/README.md). The flags point the golden tests
// at larger one-off corpora, e.g. made with go run ./tools/unicodegen -corpus -corpus-dir /tmp/big
// -corpus-seed 7 -corpus-scale 8 and the oracle scripts, then
// go test -run 'Golden' ./render/bpe/ -args -bpe.testdata /tmp/big
var testdataDir = flag.String("bpe.testdata", "../../testdata", "directory holding the unicode/ and pretok/ oracle data")

func unicodeDir() string { return filepath.Join(*testdataDir, "unicode") }

// readCodePoints parses a testdata/unicode set file: hex code points and ranges ("0041..005A"),
// into a membership slice indexed by code point.
func readCodePoints(t testing.TB, name string) []bool {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(unicodeDir(), name))
	if err != nil {
		t.Fatal(err)
	}
	set := make([]bool, unicode.MaxRune+1)
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		lo, hi, ok := strings.Cut(line, "..")
		if !ok {
			hi = lo
		}
		a, err1 := strconv.ParseUint(lo, 16, 32)
		b, err2 := strconv.ParseUint(hi, 16, 32)
		if err1 != nil || err2 != nil || b > unicode.MaxRune {
			t.Fatalf("%s: bad line %q", name, line)
		}
		for r := a; r <= b; r++ {
			set[r] = true
		}
	}
	return set
}

// readJSONLines decodes a (gzipped if .gz) file of one JSON value per line into a slice of T.
func readJSONLines[T any](t testing.TB, path string) []T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		r = zr
	}
	var out []T
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("%s line %d: %v", path, len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return out
}

// TestPropsMatchOracle checks every code point's bits against the sets extracted from the oracle.
func TestPropsMatchOracle(t *testing.T) {
	sets := []struct {
		file string
		bit  uint16
	}{
		{"L.txt", propL}, {"N.txt", propN}, {"M.txt", propM}, {"Lu.txt", propLu}, {"Ll.txt", propLl},
		{"Lt.txt", propLt}, {"Lm.txt", propLm}, {"Lo.txt", propLo}, {"space.txt", propSpace},
	}
	member := make([][]bool, len(sets))
	for i, s := range sets {
		member[i] = readCodePoints(t, s.file)
	}
	assigned9 := rangetable.Assigned("9.0.0")
	bad := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		p := propsOf(r)
		if (p&propNew != 0) == unicode.Is(assigned9, r) {
			if bad++; bad < 10 {
				t.Errorf("U+%04X: propNew is %v", r, p&propNew != 0)
			}
		}
		for i, s := range sets {
			if member[i][r] != (p&s.bit != 0) {
				if bad++; bad < 10 {
					t.Errorf("U+%04X: %s membership %v, table bit %v", r, s.file, member[i][r], p&s.bit != 0)
				}
			}
		}
		l, n, sp := member[0][r], member[1][r], member[8][r]
		derived := [...]struct {
			bit  uint16
			want bool
		}{
			{propUpper, member[3][r] || member[5][r] || member[6][r] || member[7][r] || member[2][r]},
			{propLower, member[4][r] || member[6][r] || member[7][r] || member[2][r]},
			{propPrefix, !l && !n && r != '\r' && r != '\n'},
			{propOther, !l && !n && !sp},
		}
		for _, d := range derived {
			if (p&d.bit != 0) != d.want {
				if bad++; bad < 10 {
					t.Errorf("U+%04X: derived bit %#x is %v, want %v", r, d.bit, p&d.bit != 0, d.want)
				}
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d mismatches", bad)
	}
	if got := propsOf(utf8.MaxRune + 1); got != propsOf(utf8.RuneError) {
		t.Errorf("out-of-range rune: got %#x", got)
	}
}

func TestPropsAt(t *testing.T) {
	for _, tc := range []struct {
		s    string
		bits uint16
		n    int
	}{
		{"a", propL | propLl, 1},
		{"é", propL | propLl, 2},
		{"\u3000", propSpace, 3},
		{"𝟎", propN, 4},
		{"\xff", propOther, 1},
	} {
		p, n := propsAt(tc.s, 0)
		if p&tc.bits != tc.bits || n != tc.n {
			t.Errorf("propsAt(%q) = %#x, %d; want bits %#x, %d", tc.s, p, n, tc.bits, tc.n)
		}
	}
}
