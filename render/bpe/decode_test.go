package bpe

import (
	"strings"
	"testing"
)

func TestDecodeLossy(t *testing.T) {
	tok := qwen(t)
	// Single-byte tokens, to build arbitrary byte strings.
	ids := func(b ...byte) []uint32 {
		out := make([]uint32, len(b))
		for i, c := range b {
			out[i] = tok.byteID[c]
		}
		return out
	}
	// Expected strings follow Rust's String::from_utf8_lossy (maximal subparts).
	tests := []struct {
		name string
		in   []uint32
		want string
	}{
		{"ascii", ids('h', 'i'), "hi"},
		{"complete 3-byte", ids(0xE4, 0xB8, 0xAD), "中"},
		{"truncated 3-byte", ids(0xE4, 0xB8, 'a'), "\uFFFDa"},
		{"two lone continuation", ids(0x80, 0x80), "\uFFFD\uFFFD"},
		{"surrogate encoding", ids(0xED, 0xA0, 0x80), "\uFFFD\uFFFD\uFFFD"},
		{"overlong", ids(0xC0, 0xAF), "\uFFFD\uFFFD"},
		{"F4 out of range", ids(0xF4, 0x90, 0x80, 0x80), "\uFFFD\uFFFD\uFFFD\uFFFD"},
		{"truncated 4-byte at end", ids('x', 0xF0, 0x9F, 0x98), "x\uFFFD"},
		{"FF", ids(0xFF, 'a'), "\uFFFDa"},
		{"unknown id skipped", []uint32{9707, 999999, 1879}, "Hello world"},
		{"added token", []uint32{151644, 872, 198}, "<|im_start|>user\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tok.Decode(tt.in); got != tt.want {
				t.Errorf("Decode(%v) = %q, want %q", tt.in, got, tt.want)
			}
			d := tok.NewDecodeStream()
			var b strings.Builder
			for _, id := range tt.in {
				b.WriteString(d.Next(id))
			}
			b.WriteString(d.Flush())
			if b.String() != tt.want {
				t.Errorf("DecodeStream(%v) = %q, want %q", tt.in, b.String(), tt.want)
			}
		})
	}
}

func TestDecodeStreamHoldsIncomplete(t *testing.T) {
	tok := qwen(t)
	d := tok.NewDecodeStream()
	steps := []struct {
		b    byte
		want string
	}{{'a', "a"}, {0xF0, ""}, {0x9F, ""}, {0x98, ""}, {0x80, "😀"}, {0xE4, ""}}
	for _, s := range steps {
		if got := d.Next(tok.byteID[s.b]); got != s.want {
			t.Errorf("Next(byte %#x) = %q, want %q", s.b, got, s.want)
		}
	}
	if got := d.Flush(); got != "\uFFFD" {
		t.Errorf("Flush() = %q, want U+FFFD", got)
	}
	if got := d.Flush(); got != "" {
		t.Errorf("second Flush() = %q, want empty", got)
	}
}
