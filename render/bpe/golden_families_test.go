package bpe

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// The byte-level BPE families of issue 15, checked against the Rust oracle on the shared corpus
// (edge, fuzz, docs, mixed) plus each model's own sets: strings around every added token
// (added.jsonl), the oracle's decode of the reference ids, random id arrays decoded
// (decode.jsonl), and the edge set with add_special_tokens=true. Regenerate with
// `python3 tools/oracle/corpus.py --ids` (testdata/tokenizer/README.md).

// goldenFamilies lists every model with reference ids under testdata/tokenizer/<name>/ and its
// model files under testdata/models/<name>/.
var goldenFamilies = []string{
	"qwen3", "gptoss", "qwen2_5", "llama3_1", "llama3_2", "deepseek_v3", "deepseek_v4", "mistral_nemo",
}

var familyToks sync.Map // name → *familyTok

type familyTok struct {
	once sync.Once
	tok  *Tokenizer
	err  error
}

// family returns the shared tokenizer of a model under testdata/models (loaded once).
func family(t testing.TB, name string) *Tokenizer {
	t.Helper()
	switch name {
	case "qwen3":
		return qwen(t)
	case "gptoss":
		return gptoss(t)
	}
	v, _ := familyToks.LoadOrStore(name, &familyTok{})
	f := v.(*familyTok)
	f.once.Do(func() { f.tok, f.err = Load(readModel(t, name)) })
	if f.err != nil {
		t.Fatalf("Load(%s): %v", name, f.err)
	}
	return f.tok
}

// hasGolden reports whether the model has reference ids for set.
func hasGolden(model, set string) bool {
	for _, ext := range []string{"", ".gz"} {
		if _, err := os.Stat(filepath.Join(corpusDir, model, set+".ids.jsonl"+ext)); err == nil {
			return true
		}
	}
	return false
}

// checkIDs compares Encode with the reference ids of every case and reports the differences.
func checkIDs(t *testing.T, tok *Tokenizer, label string, cases []goldenCase, encode func(string) []uint32) {
	t.Helper()
	bad := 0
	for _, c := range cases {
		got := encode(c.text)
		if equalIDs(got, c.want) {
			continue
		}
		bad++
		if bad <= 10 {
			i := firstDiff(got, c.want)
			t.Errorf("%s %s: Encode(%.80q) differs at id %d: got %v, want %v", label, c.name, c.text, i, window(got, i), window(c.want, i))
		}
	}
	if bad > 0 {
		t.Errorf("%s: %d of %d cases differ from the Rust oracle", label, bad, len(cases))
	}
	t.Logf("%s: %d cases, %d mismatches", label, len(cases), bad)
}

// TestGoldenAdded: each model's strings around its own added tokens.
func TestGoldenAdded(t *testing.T) {
	for _, m := range goldenFamilies {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			if !hasGolden(m, "added") {
				t.Fatalf("%s: no added.ids.jsonl", m)
			}
			tok := family(t, m)
			checkIDs(t, tok, m+"/added", loadGolden(t, m, m+"/added"), tok.Encode)
		})
	}
}

// TestGoldenSpecialTokens: the edge set with add_special_tokens=true (the post-processor applied).
func TestGoldenSpecialTokens(t *testing.T) {
	for _, m := range goldenFamilies {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			tok := family(t, m)
			cases := loadGolden(t, m, "edge")
			want := readLines(t, filepath.Join(m, "edge.special.ids.jsonl"))
			if len(want) != len(cases) {
				t.Fatalf("%d special lines for %d cases", len(want), len(cases))
			}
			for i := range cases {
				ids, err := parseIDs(want[i])
				if err != nil {
					t.Fatal(err)
				}
				cases[i].want = ids
			}
			checkIDs(t, tok, m+"/edge special", cases, tok.EncodeWithSpecialTokens)
		})
	}
}

// TestGoldenDecode: Decode of the reference ids equals the oracle's decode of them (the input text
// unless decoded.jsonl lists the line), and random id arrays decode as the oracle does.
func TestGoldenDecode(t *testing.T) {
	for _, m := range goldenFamilies {
		t.Run(m, func(t *testing.T) {
			t.Parallel()
			tok := family(t, m)
			total, bad := 0, 0
			for _, set := range []string{"edge", "fuzz", "docs", "added"} {
				if testing.Short() && set != "edge" {
					continue
				}
				src := set
				if set == "added" {
					src = m + "/added"
				}
				cases := loadGolden(t, m, src)
				diff := map[int]string{}
				for _, line := range readLines(t, filepath.Join(m, set+".decoded.jsonl")) {
					var entry [2]json.RawMessage
					var n int
					var s string
					if err := json.Unmarshal(line, &entry); err != nil {
						t.Fatal(err)
					}
					if json.Unmarshal(entry[0], &n) != nil || json.Unmarshal(entry[1], &s) != nil {
						t.Fatalf("bad decoded line %.60q", line)
					}
					diff[n] = s
				}
				for i, c := range cases {
					want, ok := diff[i+1]
					if !ok {
						want = c.text
					}
					total++
					if got := tok.Decode(c.want); got != want {
						bad++
						if bad <= 10 {
							t.Errorf("%s %s: Decode = %.80q, want %.80q", m, c.name, got, want)
						}
					}
				}
			}
			arrays := readLines(t, filepath.Join(m, "decode.jsonl"))
			texts := readLines(t, filepath.Join(m, "decode.decoded.jsonl"))
			if len(arrays) != len(texts) || len(arrays) == 0 {
				t.Fatalf("decode.jsonl: %d arrays, %d texts", len(arrays), len(texts))
			}
			for i := range arrays {
				ids, err := parseIDs(arrays[i])
				if err != nil {
					t.Fatal(err)
				}
				var want string
				if err := json.Unmarshal(texts[i], &want); err != nil {
					t.Fatal(err)
				}
				total++
				if got := tok.Decode(ids); got != want {
					bad++
					if bad <= 10 {
						t.Errorf("%s decode line %d: Decode(%v) = %q, want %q", m, i+1, ids, got, want)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d decodes differ from the Rust oracle", m, bad, total)
			}
			t.Logf("%s: %d decodes, %d mismatches", m, total, bad)
		})
	}
}

// TestGoldenCounts: every model is checked on at least 60,000 strings (issue 15).
func TestGoldenCounts(t *testing.T) {
	for _, m := range goldenFamilies {
		n := 0
		for _, set := range []string{"edge", "fuzz", "docs", "mixed", m + "/added"} {
			n += len(loadGolden(t, m, set))
		}
		if n < 60000 {
			t.Errorf("%s: %d strings with reference ids, want >= 60000", m, n)
		}
		t.Logf("%s: %d strings", m, n)
	}
}

// TestModelFiles: the family model files are the ones testdata/models/README.md lists (sha256 of
// the uncompressed tokenizer.json).
func TestModelFiles(t *testing.T) {
	want := map[string]string{
		"qwen2_5":      "c0382117ea329cdf097041132f6d735924b697924d6f6fc3945713e96ce87539",
		"llama3_1":     "e134af98b985517b4f068e3755ae90d4e9cd2d45d328325dc503f1c6b2d06cc7",
		"llama3_2":     "6b9e4e7fb171f92fd137b777cc2714bf87d11576700a1dcd7a399e7bbe39537b",
		"deepseek_v3":  "621ac2e32d0dba658404412318818aaa8ce8cda492e59830109d8da6b517fb41",
		"deepseek_v4":  "8f9f37ca37fdc4f5fd36d5cf4d3b0e8392edb4e894fd10cc0d70b4957c8633cf",
		"mistral_nemo": "e11c71726323d33da7b8d6f6f269f1988931c0a52b7122bcdd8c05042974e0db",
		"gptoss":       "0614fe83cadab421296e664e1f48f4261fa8fef6e03e63bb75c20f38e37d07d3",
		"llama2":       "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc",
		"gemma3":       "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795",
	}
	for name, sum := range want {
		got := sha256.Sum256(readModel(t, name))
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: tokenizer.json sha256 %x, want %s", name, got, sum)
		}
	}
}
