package bpe

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// The exactness suite: testdata/tokenizer holds a corpus (seeded fuzz strings, hand-written edge
// cases, real documents, 1 MiB of mixed text) and the Rust crate's ids for it, per model. Regenerate
// with `python3 tools/oracle/corpus.py --ids` (see testdata/tokenizer/README.md).

const corpusDir = "../../testdata/tokenizer"

// readLines returns the lines of name or name.gz under corpusDir (split on "\n" only).
func readLines(t testing.TB, name string) [][]byte {
	t.Helper()
	path := filepath.Join(corpusDir, name)
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		data, err = os.ReadFile(path + ".gz")
		if err == nil {
			var zr *gzip.Reader
			zr, err = gzip.NewReader(bytes.NewReader(data))
			if err == nil {
				data, err = io.ReadAll(zr)
			}
		}
	}
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	lines := bytes.Split(data, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	return lines
}

// parseIDs parses a JSON array of non-negative integers.
func parseIDs(line []byte) ([]uint32, error) {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '[' || line[len(line)-1] != ']' {
		return nil, fmt.Errorf("not an array: %.40q", line)
	}
	ids := []uint32{}
	for _, f := range bytes.Split(line[1:len(line)-1], []byte(",")) {
		if len(f) == 0 {
			continue
		}
		n, err := strconv.ParseUint(string(bytes.TrimSpace(f)), 10, 32)
		if err != nil {
			return nil, err
		}
		ids = append(ids, uint32(n))
	}
	return ids, nil
}

type goldenCase struct {
	name string
	text string
	want []uint32
}

func loadGolden(t testing.TB, model, set string) []goldenCase {
	t.Helper()
	var texts []string
	if set == "mixed" {
		data, err := os.ReadFile(filepath.Join(corpusDir, "mixed.txt"))
		if err != nil {
			t.Fatal(err)
		}
		texts = []string{string(data)}
	} else {
		for i, line := range readLines(t, set+".jsonl") {
			var s string
			if err := json.Unmarshal(line, &s); err != nil {
				t.Fatalf("%s.jsonl line %d: %v", set, i+1, err)
			}
			texts = append(texts, s)
		}
	}
	idLines := readLines(t, filepath.Join(model, filepath.Base(set)+".ids.jsonl"))
	if len(idLines) != len(texts) {
		t.Fatalf("%s/%s: %d reference lines for %d inputs", model, set, len(idLines), len(texts))
	}
	cases := make([]goldenCase, len(texts))
	for i, line := range idLines {
		ids, err := parseIDs(line)
		if err != nil {
			t.Fatalf("%s/%s.ids.jsonl line %d: %v", model, set, i+1, err)
		}
		cases[i] = goldenCase{name: fmt.Sprintf("%s line %d", set, i+1), text: texts[i], want: ids}
	}
	return cases
}

func TestGolden(t *testing.T) {
	sets := []string{"edge", "fuzz", "docs", "mixed"}
	for _, name := range goldenFamilies {
		m := struct{ name string }{name}
		for _, set := range sets {
			t.Run(m.name+"/"+set, func(t *testing.T) {
				t.Parallel() // the tokenizers are safe for concurrent use
				if testing.Short() && set != "edge" {
					t.Skip("golden sweep skipped in -short mode")
				}
				tok := family(t, m.name)
				bad := 0
				cases := loadGolden(t, m.name, set)
				for _, c := range cases {
					got := tok.Encode(c.text)
					if equalIDs(got, c.want) {
						continue
					}
					bad++
					if bad <= 10 {
						i := firstDiff(got, c.want)
						t.Errorf("%s: Encode(%.80q) differs at id %d: got %v, want %v",
							c.name, c.text, i, window(got, i), window(c.want, i))
					}
				}
				if bad > 0 {
					t.Errorf("%s/%s: %d of %d cases differ from the Rust oracle", m.name, set, bad, len(cases))
				}
			})
		}
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

func firstDiff(a, b []uint32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func window(ids []uint32, i int) []uint32 {
	return ids[max(0, i-3):min(len(ids), i+5)]
}

// readCorpusFile is a helper for benchmarks: the raw bytes of a corpus file.
func readCorpusFile(t testing.TB, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestBoundaryIndependence checks the property the certified suffix relies on (docs/design.md "Certified suffix"): at the
// start or end of an added-token match, Encode(text) == Encode(text[:o]) ++ Encode(text[o:]).
func TestBoundaryIndependence(t *testing.T) {
	for _, name := range goldenFamilies {
		m := struct{ name string }{name}
		tok := family(t, name)
		checked := 0
		for _, set := range []string{"edge", name + "/added", "fuzz"} {
			for _, c := range loadGolden(t, m.name, set) {
				spans := tok.AddedTokenSpans(c.text)
				if len(spans) == 0 {
					continue
				}
				sp := spans[len(spans)/2]
				for _, o := range []int{sp.Start, sp.End} {
					got := append(tok.Encode(c.text[:o]), tok.Encode(c.text[o:])...)
					if !equalIDs(got, c.want) {
						t.Errorf("%s %s: split at %d of %.60q: %v, want %v", m.name, c.name, o, c.text, got, c.want)
					}
				}
				if checked++; checked >= 3000 {
					break
				}
			}
		}
		if checked < 100 {
			t.Errorf("%s: only %d texts with added tokens", m.name, checked)
		}
	}
}
