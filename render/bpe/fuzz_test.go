package bpe

import (
	"strings"
	"testing"
	"unicode/utf8"
)

var fuzzSeeds = []string{
	"", "Hello world", "  a  \n\n b", "<|im_start|>user\nhi<|im_end|>\n", "<think>\n\n</think>\n\n",
	"don't 'ſ 'S", "e\u0301\u0323 \u1100\u1161", "\U0001f468\u200d\U0001f469\u200d\U0001f467",
	"12345678 \u0661\u0662", ">\u0338 <|im_end|>\u0338", "\u4e2d\u6587\u5b57\u7b26" + strings.Repeat("x", 100),
	"\r\n\r\n\t \u00a0\u3000", "\U00011f00\U00016d40\U0001e5d0",
}

// nfcPieces is what the Rust crate's pipeline makes of s before BPE: added tokens verbatim and
// every segment between them in NFC (normalization never crosses an added token).
func nfcPieces(t *Tokenizer, s string) string {
	var b strings.Builder
	pos := 0
	for _, sp := range t.AddedTokenSpans(s) {
		b.WriteString(normalizeNFC(s[pos:sp.Start]))
		b.WriteString(s[sp.Start:sp.End])
		pos = sp.End
	}
	b.WriteString(normalizeNFC(s[pos:]))
	return b.String()
}

// FuzzBPERoundTrip checks that decoding the encoding gives back the (normalized) input, for both
// models, and that encoding never panics.
func FuzzBPERoundTrip(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	toks := []*Tokenizer{qwen(f), gptoss(f)}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids := tok.Encode(s)
			if !utf8.ValidString(s) {
				continue
			}
			want := s
			if tok.normalize {
				want = nfcPieces(tok, s)
				if len(tok.AddedTokenSpans(s)) == 0 && want != normalizeNFC(s) {
					t.Fatalf("nfcPieces(%q) = %q, want NFC %q", s, want, normalizeNFC(s))
				}
			}
			if got := tok.Decode(ids); got != want {
				t.Fatalf("Decode(Encode(%q)) = %q, want %q (ids %v)", s, got, want, ids)
			}
		}
	})
}

// FuzzDecodeStream checks that the streamed pieces concatenate to Decode, for any ids (also ones
// that split UTF-8 sequences or are unknown).
func FuzzDecodeStream(f *testing.F) {
	for i, s := range fuzzSeeds {
		f.Add(s, []byte{byte(i), 0xff, 0x01, 0x37, 0x80, 0x02})
	}
	tok := qwen(f)
	f.Fuzz(func(t *testing.T, s string, raw []byte) {
		ids := tok.Encode(s)
		// Splice in ids from raw: byte-level tokens of lone UTF-8 bytes, and ids past the vocab.
		for i := 0; i+2 < len(raw); i += 3 {
			id := (uint32(raw[i+1])<<8 | uint32(raw[i+2])) % uint32(tok.VocabSize()+16)
			at := int(raw[i]) % (len(ids) + 1)
			ids = append(ids[:at], append([]uint32{id}, ids[at:]...)...)
		}
		d := tok.NewDecodeStream()
		var b strings.Builder
		for _, id := range ids {
			piece := d.Next(id)
			if !utf8.ValidString(piece) {
				t.Fatalf("Next(%d) = %q: invalid UTF-8", id, piece)
			}
			b.WriteString(piece)
		}
		b.WriteString(d.Flush())
		if want := tok.Decode(ids); b.String() != want {
			t.Fatalf("stream of %v = %q, want Decode %q", ids, b.String(), want)
		}
	})
}
