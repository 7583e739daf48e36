package bpe

import (
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The Metaspace suite (testdata/tokenizer/metaspace): no model file that ships offline uses the
// Metaspace pre-tokenizer or decoder, so each variant is llama2's tokenizer.json with the
// normalizer, pre_tokenizer and decoder of variants.json, and the Rust crate's ids and decodes of
// it are the reference. Regenerate with `python3 tools/oracle/corpus_metaspace.py`.

var metaspaceSets = []string{"start", "chat", "edge", "spm", "added"}

// metaspaceFullSets are the "first" variant's (Mistral 7B v0.3's settings) ids of the whole spm
// set and of the shared fuzz set: with the sets above, 95,325 strings.
var metaspaceFullSets = map[string]string{"spm_full": "spm", "fuzz": "fuzz"}

// metaspaceVariants loads every variant of variants.json, in name order.
func metaspaceVariants(t testing.TB) (names []string, toks map[string]*Tokenizer) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(corpusDir, "metaspace", "variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var variants map[string]map[string]json.RawMessage
	if err := json.Unmarshal(data, &variants); err != nil {
		t.Fatal(err)
	}
	var base map[string]json.RawMessage
	if err := json.Unmarshal(readModel(t, "llama2"), &base); err != nil {
		t.Fatal(err)
	}
	toks = map[string]*Tokenizer{}
	for name, parts := range variants {
		doc := maps.Clone(base)
		maps.Copy(doc, parts)
		raw, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := Load(raw)
		if err != nil {
			t.Fatalf("Load(%s): %v", name, err)
		}
		toks[name] = tok
		names = append(names, name)
	}
	slices.Sort(names)
	return names, toks
}

func TestGoldenMetaspace(t *testing.T) {
	names, toks := metaspaceVariants(t)
	for _, name := range names {
		tok := toks[name]
		for _, set := range metaspaceSets {
			t.Run(name+"/"+set, func(t *testing.T) {
				t.Parallel()
				texts := readStrings(t, map[string]string{"start": "metaspace/start", "chat": "metaspace/chat", "edge": "edge", "spm": "spm", "added": "llama2/added"}[set]+".jsonl")
				want := readIDLines(t, filepath.Join("metaspace", name, set+".ids.jsonl"))
				texts = texts[:len(want)]
				cases := make([]goldenCase, len(texts))
				for i := range texts {
					cases[i] = goldenCase{text: texts[i], want: want[i]}
				}
				decoded := readDecodes(t, filepath.Join("metaspace", name, set+".text.jsonl"), cases)
				bad := 0
				for i, c := range cases {
					got := tok.Encode(c.text)
					if !slices.Equal(got, c.want) {
						if bad++; bad <= 5 {
							t.Errorf("line %d %q: ids %v, want %v", i+1, c.text, got, c.want)
						}
						continue
					}
					if s := tok.Decode(c.want); s != decoded[i] {
						if bad++; bad <= 5 {
							t.Errorf("line %d: Decode = %q, want %q", i+1, s, decoded[i])
						}
					}
					if s := streamDecode(tok, c.want); s != decoded[i] {
						if bad++; bad <= 5 {
							t.Errorf("line %d: DecodeStream = %q, want %q", i+1, s, decoded[i])
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d lines differ", bad, len(cases))
				}
			})
		}
		for set, input := range metaspaceFullSets {
			if name != "first" {
				continue
			}
			t.Run(name+"/"+set, func(t *testing.T) {
				t.Parallel()
				if testing.Short() {
					t.Skip("long set")
				}
				texts := readStrings(t, input+".jsonl")
				want := readIDLines(t, filepath.Join("metaspace", name, set+".ids.jsonl"))
				if len(texts) != len(want) {
					t.Fatalf("%d texts, %d id lines", len(texts), len(want))
				}
				bad := 0
				for i, text := range texts {
					got := tok.Encode(text)
					if !slices.Equal(got, want[i]) {
						if bad++; bad <= 5 {
							t.Errorf("line %d %q: ids %v, want %v", i+1, text, got, want[i])
						}
					} else if a, b := tok.Decode(got), streamDecode(tok, got); a != b {
						if bad++; bad <= 5 {
							t.Errorf("line %d: Decode %q, DecodeStream %q", i+1, a, b)
						}
					}
				}
				if bad > 0 {
					t.Errorf("%d of %d lines differ", bad, len(texts))
				}
			})
		}
		t.Run(name+"/decode", func(t *testing.T) {
			t.Parallel()
			arrays := readIDLines(t, "llama2/decode.ids.jsonl")
			want := readStrings(t, filepath.Join("metaspace", name, "decode.text.jsonl"))
			bad := 0
			for i, w := range want {
				if got := tok.Decode(arrays[i]); got != w {
					if bad++; bad <= 5 {
						t.Errorf("array %d: Decode = %q, want %q", i+1, got, w)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d decodes differ", bad, len(want))
			}
		})
	}
}

// TestMetaspaceTailAtBoundaries: with prepend_scheme "first" the segment at offset 0 alone gets
// the "▁", so a text cut at an added-token boundary o encodes as Encode(text[:o]) followed by
// AppendEncodeTail(text[o:]) — what render's certified suffix relies on (render/suffix.go).
func TestMetaspaceTailAtBoundaries(t *testing.T) {
	names, toks := metaspaceVariants(t)
	texts := append(readStrings(t, "metaspace/start.jsonl"), readStrings(t, "edge.jsonl")...)
	for _, name := range names {
		tok := toks[name]
		if (name == "first" || name == "first_split") != tok.AtStartMatters() {
			t.Errorf("%s: AtStartMatters = %v", name, tok.AtStartMatters())
		}
		for _, text := range texts {
			want := tok.Encode(text)
			for _, sp := range tok.AddedTokenSpans(text) {
				for _, o := range []int{sp.Start, sp.End} {
					if o == 0 {
						continue
					}
					got := tok.AppendEncodeTail(tok.Encode(text[:o]), text[o:])
					if !slices.Equal(got, want) {
						t.Errorf("%s %q cut at %d: %v, want %v", name, text, o, got, want)
					}
				}
			}
		}
	}
}

// TestMetaspaceRefusals: what the crate refuses, or what stitch cannot run exactly, is refused
// with the reason named.
func TestMetaspaceRefusals(t *testing.T) {
	var base map[string]json.RawMessage
	if err := json.Unmarshal(readModel(t, "llama2"), &base); err != nil {
		t.Fatal(err)
	}
	meta := `{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":false}`
	for _, tt := range []struct {
		name, pre, dec string
		want           error
		mention        string
	}{
		{"add_prefix_space false with always", `{"type":"Metaspace","replacement":"▁","add_prefix_space":false}`, meta, ErrInvalid, "add_prefix_space"},
		{"no replacement", `{"type":"Metaspace","prepend_scheme":"first"}`, meta, ErrInvalid, "replacement"},
		{"bad scheme", `{"type":"Metaspace","replacement":"▁","prepend_scheme":"sometimes"}`, meta, ErrInvalid, "sometimes"},
		{"after Fuse", meta, `{"type":"Sequence","decoders":[{"type":"Fuse"},` + meta + `]}`, ErrUnsupported, "Metaspace after Fuse"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			doc := maps.Clone(base)
			doc["normalizer"] = json.RawMessage("null")
			doc["pre_tokenizer"] = json.RawMessage(tt.pre)
			doc["decoder"] = json.RawMessage(tt.dec)
			raw, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(raw)
			if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.mention) {
				t.Fatalf("Load: %v, want %v naming %q", err, tt.want, tt.mention)
			}
		})
	}
}

// FuzzMetaspaceTail: for every Metaspace variant, a text cut at any added-token boundary encodes
// as its whole (AppendEncodeTail after the cut), and DecodeStream agrees with Decode.
func FuzzMetaspaceTail(f *testing.F) {
	for _, s := range []string{"<s>[INST] Hi [/INST] Yes</s>", " a  b ", "x<s> y</s>z", "▁<unk>▁", "\n<s>\n"} {
		f.Add(s)
	}
	names, toks := metaspaceVariants(f)
	f.Fuzz(func(t *testing.T, s string) {
		for _, name := range names {
			tok := toks[name]
			want := tok.Encode(s)
			for _, sp := range tok.AddedTokenSpans(s) {
				for _, o := range []int{sp.Start, sp.End} {
					if o == 0 {
						continue
					}
					if got := tok.AppendEncodeTail(tok.Encode(s[:o]), s[o:]); !slices.Equal(got, want) {
						t.Fatalf("%s %q cut at %d: %v, want %v", name, s, o, got, want)
					}
				}
			}
			if a, b := tok.Decode(want), streamDecode(tok, want); a != b {
				t.Fatalf("%s %q: Decode %q, DecodeStream %q", name, s, a, b)
			}
		}
	})
}
