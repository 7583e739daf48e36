package bpe

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// The exactness suite of the SentencePiece-style models: the shared corpus (edge, fuzz, docs,
// mixed) plus spm.jsonl (aimed at SentencePiece's rules) and each model's added set (every added
// token of the model in and around text, <model>/added.jsonl), with the Rust crate's ids and
// decodes. Regenerate with `python3 tools/oracle/corpus_spm.py --ids` (testdata/tokenizer/README.md).

var spmSets = []string{"edge", "spm", "fuzz", "docs", "mixed", "added"}

// spmTextSets have the oracle's decode of their reference ids.
var spmTextSets = map[string]bool{"edge": true, "spm": true, "fuzz": true, "added": true}

// spmSetPath names a set's input file under testdata/tokenizer: the added set is per model.
func spmSetPath(model, set string) string {
	if set == "added" {
		return model + "/added"
	}
	return set
}

func readStrings(t testing.TB, name string) []string {
	t.Helper()
	lines := readLines(t, name)
	out := make([]string, len(lines))
	for i, line := range lines {
		if err := json.Unmarshal(line, &out[i]); err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
	}
	return out
}

// readDecodes reads the oracle's decodes of the reference ids of cases: a line is null when the
// decode is the case's text itself.
func readDecodes(t testing.TB, name string, cases []goldenCase) []string {
	t.Helper()
	lines := readLines(t, name)
	if len(lines) != len(cases) {
		t.Fatalf("%s: %d decodes for %d cases", name, len(lines), len(cases))
	}
	out := make([]string, len(lines))
	for i, line := range lines {
		var s *string
		if err := json.Unmarshal(line, &s); err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		out[i] = cases[i].text
		if s != nil {
			out[i] = *s
		}
	}
	return out
}

func readIDLines(t testing.TB, name string) [][]uint32 {
	t.Helper()
	lines := readLines(t, name)
	out := make([][]uint32, len(lines))
	for i, line := range lines {
		ids, err := parseIDs(line)
		if err != nil {
			t.Fatalf("%s line %d: %v", name, i+1, err)
		}
		out[i] = ids
	}
	return out
}

func TestGoldenSentencePiece(t *testing.T) {
	for _, m := range spmModels {
		for _, set := range spmSets {
			t.Run(m.name+"/"+set, func(t *testing.T) {
				t.Parallel()
				if testing.Short() && set != "edge" {
					t.Skip("golden sweep skipped in -short mode")
				}
				tok := m.tok(t)
				cases := loadGolden(t, m.name, spmSetPath(m.name, set))
				var texts []string
				if spmTextSets[set] {
					texts = readDecodes(t, filepath.Join(m.name, set+".text.jsonl"), cases)
				}
				badIDs, badText := 0, 0
				for i, c := range cases {
					got := tok.Encode(c.text)
					if !equalIDs(got, c.want) {
						if badIDs++; badIDs <= 10 {
							j := firstDiff(got, c.want)
							t.Errorf("%s: Encode(%.80q) differs at id %d: got %v, want %v",
								c.name, c.text, j, window(got, j), window(c.want, j))
						}
					}
					if texts == nil {
						continue
					}
					dec, stream := tok.Decode(c.want), streamDecode(tok, c.want)
					if dec != texts[i] || stream != texts[i] {
						if badText++; badText <= 10 {
							t.Errorf("%s: Decode(%v) = %.80q, stream %.80q, want %.80q", c.name, window(c.want, 0), dec, stream, texts[i])
						}
					}
				}
				if badIDs > 0 || badText > 0 {
					t.Errorf("%s/%s: %d of %d encodes and %d decodes differ from the Rust oracle", m.name, set, badIDs, len(cases), badText)
				}
				t.Logf("%s/%s: %d strings, %d decodes checked", m.name, set, len(cases), len(texts))
			})
		}
	}
}

// TestGoldenSentencePieceDecode decodes seeded adversarial id sequences: byte tokens that form valid
// and invalid UTF-8, "▁" tokens first (the Strip decoder), added tokens and unknown ids.
func TestGoldenSentencePieceDecode(t *testing.T) {
	for _, m := range spmModels {
		t.Run(m.name, func(t *testing.T) {
			tok := m.tok(t)
			idLines := readIDLines(t, filepath.Join(m.name, "decode.ids.jsonl"))
			texts := readStrings(t, filepath.Join(m.name, "decode.text.jsonl"))
			if len(idLines) != len(texts) {
				t.Fatalf("%d decodes for %d id lines", len(texts), len(idLines))
			}
			bad := 0
			for i, ids := range idLines {
				dec, stream := tok.Decode(ids), streamDecode(tok, ids)
				if dec != texts[i] || stream != texts[i] {
					if bad++; bad <= 10 {
						t.Errorf("line %d: Decode(%v) = %q, stream %q, want %q", i+1, ids, dec, stream, texts[i])
					}
				}
			}
			if bad > 0 {
				t.Errorf("%s: %d of %d decodes differ from the Rust oracle", m.name, bad, len(texts))
			}
		})
	}
}

// TestSentencePieceSpecialTokens pins what Encode leaves out: with add_special_tokens=true the
// crate's TemplateProcessing puts the BOS token first, and nothing else; vLLM's chat path encodes
// with add_special_tokens=false (the chat template writes the BOS), which is what Encode does.
// EncodeWithSpecialTokens (`stitch tokenize --add-special-tokens`) adds it as the crate does.
func TestSentencePieceSpecialTokens(t *testing.T) {
	for _, m := range []struct {
		name string
		tok  func(testing.TB) *Tokenizer
		bos  uint32
	}{{"llama2", llama2, 1}, {"gemma3", gemma3, 2}} {
		t.Run(m.name, func(t *testing.T) {
			tok := m.tok(t)
			texts := readStrings(t, "spm.jsonl")
			special := readIDLines(t, filepath.Join(m.name, "special.ids.jsonl"))
			for i, want := range special {
				got := append([]uint32{m.bos}, tok.Encode(texts[i])...)
				if !equalIDs(got, want) {
					t.Fatalf("line %d: BOS + Encode(%.60q) = %v, the crate with special tokens %v", i+1, texts[i], window(got, 0), window(want, 0))
				}
				if got := tok.EncodeWithSpecialTokens(texts[i]); !equalIDs(got, want) {
					t.Fatalf("line %d: EncodeWithSpecialTokens(%.60q) = %v, the crate with special tokens %v", i+1, texts[i], window(got, 0), window(want, 0))
				}
			}
		})
	}
}

// TestSentencePieceBoundaryIndependence checks the property render's certified suffix relies on:
// at the start or end of an added-token match, Encode(text) == Encode(text[:o]) ++ Encode(text[o:]).
// It holds here because Prepend applies to each segment between added tokens on its own.
func TestSentencePieceBoundaryIndependence(t *testing.T) {
	for _, m := range spmModels {
		tok := m.tok(t)
		checked := 0
		for _, set := range []string{"edge", "spm"} {
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
				checked++
			}
		}
		if checked < 1000 {
			t.Errorf("%s: only %d texts with added tokens", m.name, checked)
		}
	}
}

// TestSentencePieceGoldenCounts: like TestGoldenCounts, every SentencePiece-style model is checked
// on at least 60,000 strings, and its added set names every added token of the model.
func TestSentencePieceGoldenCounts(t *testing.T) {
	for _, m := range spmModels {
		n := 0
		for _, set := range spmSets {
			n += len(loadGolden(t, m.name, spmSetPath(m.name, set)))
		}
		if n < 60000 {
			t.Errorf("%s: %d strings with reference ids, want >= 60000", m.name, n)
		}
		added := readStrings(t, m.name+"/added.jsonl")
		have := make(map[string]bool, len(added))
		for _, s := range added {
			have[s] = true
		}
		tok := m.tok(t)
		missing := 0
		for a := range tok.addedByContent {
			if !have[a] {
				missing++
			}
		}
		if missing > 0 {
			t.Errorf("%s: %d added tokens have no line of their own in added.jsonl", m.name, missing)
		}
		t.Logf("%s: %d strings, %d added tokens", m.name, n, len(tok.addedByContent))
	}
}
